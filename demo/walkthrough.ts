// The copy-paste walk-through `npm start` prints: discover -> token -> action, the crowd deciding a
// vote by zone, a page switch and the CLI, then a small crowd to watch for 30 s.
export interface WalkthroughInput {
  api: string;
  /** what to show for Redis: a URL without its password, or the cluster's seed nodes */
  redisShown: string;
  redisNote: string;
  /** the environment that selects the same Redis for audiencectl (REDIS_URL=... or REDIS_CLUSTER_NODES=...) */
  redisEnv: string;
  /** redis-cli's arguments to reach it (-u URL, or -c -h HOST -p PORT) */
  redisCli: string;
  apiKey: string;
  layoutId: string;
  teamId: string;
  /** host:port of the OSC monitor the demo bridge sends to */
  osc: string;
  adminEmail: string;
  adminPassword: string;
  /** the built audiencectl's absolute path, so the commands work from any folder */
  cli: string;
  /** the audience page with a demo token in its fragment, and how long that token lasts */
  play: string;
  tokenHours: number;
  /** the key and password are the previous start's (its tokens keep working) */
  reused: boolean;
  /** the built audience-loadtest and the demo's crowd scenario, absolute paths */
  loadtest: string;
  crowdScenario: string;
}

export function walkthrough(w: WalkthroughInput): string {
  const ctl = `${w.redisEnv} node '${w.cli.replaceAll("'", "'\\''")}'`;
  return `
audience-control is running
  API      ${w.api}
  Redis    ${w.redisShown} (${w.redisNote})
  Team     ${w.teamId}
  Layout   ${w.layoutId}
  API key  ${w.apiKey}
           (${w.reused ? "reused: the previous start's key, so the tokens it minted keep working" : 'created: kept in var/demo.json for the next start, never in Redis'})
  Admin    ${w.api}/admin/  sign in as ${w.adminEmail} with ${w.adminPassword}
           (${w.reused ? 'reused' : 'created'}; create your own with: audiencectl admin create)
  Bridge   demo-bridge, sending ${w.layoutId} to the OSC monitor at ${w.osc}
           (a stand-in display: every OSC message it receives is printed here as "[osc ...]")
  Phone    ${w.play}
           (the audience page: open it in a browser, move the slider, watch the [osc ...] lines;
           its token lasts ${w.tokenHours} h)

Try it in another terminal (copy-paste):

  export API=${w.api} KEY=${w.apiKey}

  # 1. discover the controls on the active page (destinationCount 1: the monitor)
  curl -s $API/layout/${w.layoutId} -H "x-api-key: $KEY"; echo

  # 2. mint an audience token (your backend does this and hands the token to the app)
  TOKEN=$(curl -s $API/token -H "x-api-key: $KEY" -H 'content-type: application/json' -d '{"layoutId":"${w.layoutId}"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')

  # 3. send actions as the audience app would; watch the [osc ...] lines appear here
  curl -s $API/action -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"layoutId":"${w.layoutId}","lid":2,"type":"Slider","value":0.75}'; echo
  curl -s $API/action -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"layoutId":"${w.layoutId}","lid":6,"type":"XYPad","value":[0.2,0.9]}'; echo

  # 4. the crowd decides: a token per seat's zone, three votes for Blue; the vote's cue fires
  #    once (quorum 3, 60 % of the votes, held 1 s): watch for "/011/cue ,i 2"
  for zone in left right left; do
    T=$(curl -s $API/token -H "x-api-key: $KEY" -H 'content-type: application/json' -d '{"layoutId":"${w.layoutId}","zone":"'$zone'"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')
    curl -s $API/action -H "authorization: Bearer $T" -H 'content-type: application/json' -d '{"layoutId":"${w.layoutId}","lid":11,"type":"Index","value":2}'; echo
  done

  # 5. switch the active page, discover again
  ${ctl} layout activate ${w.layoutId} encore
  curl -s $API/layout/${w.layoutId} -H "x-api-key: $KEY"; echo

  # 6. the layout as stored (its pages, and which one is active)
  ${ctl} layout show ${w.layoutId}
  # 7. the last actions that reached the layout's stream
  redis-cli ${w.redisCli} XREVRANGE 'ac:layout:{${w.layoutId}}:actions' + - COUNT 5

  # 8. a small crowd for 30 s (50 phones; switch back to main first): the crowd values move on
  #    the phone page and on the team page's crowd view, and the strobe's cue fires on the monitor
  ${ctl} layout activate ${w.layoutId} main
  AUDIENCE_API_KEY=$KEY node '${w.loadtest.replaceAll("'", "'\\''")}' run --target $API '${w.crowdScenario.replaceAll("'", "'\\''")}'

Stop with Ctrl-C.
`;
}
