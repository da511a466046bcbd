// The copy-paste walk-through `npm start` prints: discover -> token -> action, then the CLI.
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
           (a fresh demo key each start: the secret is shown once and never stored)
  Admin    ${w.api}/admin/  sign in as ${w.adminEmail} with ${w.adminPassword}
           (a fresh password each start; create your own with: audiencectl admin create)
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

  # 4. switch the active page, discover again
  ${ctl} layout activate ${w.layoutId} encore
  curl -s $API/layout/${w.layoutId} -H "x-api-key: $KEY"; echo

  # 5. the layout as stored (its pages, and which one is active)
  ${ctl} layout show ${w.layoutId}
  # 6. the last actions that reached the layout's stream
  redis-cli ${w.redisCli} XREVRANGE 'ac:layout:{${w.layoutId}}:actions' + - COUNT 5

Stop with Ctrl-C.
`;
}
