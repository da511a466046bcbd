// TLS to Redis (a rediss:// URL or seed node): the files that name whom to trust and who we are.
// One shape for every process: the gateway and audiencectl read REDIS_TLS_* from the environment,
// the bridge reads them too, and its config file's `redisTls` overrides them. A file that cannot be
// read is a configuration error naming its setting and path; a certificate that does not verify is
// refused at start (and by --check-config) with a message naming the file, never retried for ever.
import { readFileSync } from 'node:fs';
import { connect, type ConnectionOptions } from 'node:tls';

/** The TLS settings of a Redis connection; every field optional (a rediss:// URL alone trusts the system's CAs). */
export interface RedisTlsFiles {
  /** PEM CA certificate(s) the server's certificate must chain to (REDIS_TLS_CA_FILE) */
  caFile?: string | undefined;
  /** PEM client certificate, for a server that asks for one (REDIS_TLS_CERT_FILE) */
  certFile?: string | undefined;
  /** PEM private key of that certificate (REDIS_TLS_KEY_FILE) */
  keyFile?: string | undefined;
  /** the name the server's certificate must carry, when it is not the host connected to (REDIS_TLS_SERVERNAME) */
  servername?: string | undefined;
}

/** Where each setting comes from, for messages: the environment variable (or the bridge's config key). */
export const TLS_SETTING = { caFile: 'REDIS_TLS_CA_FILE', certFile: 'REDIS_TLS_CERT_FILE', keyFile: 'REDIS_TLS_KEY_FILE', servername: 'REDIS_TLS_SERVERNAME' } as const;

export class RedisTlsError extends Error {
  override name = 'RedisTlsError';
}

/** REDIS_TLS_* from the environment; undefined when none is set. */
export function redisTlsFromEnv(env: NodeJS.ProcessEnv): RedisTlsFiles | undefined {
  const files: RedisTlsFiles = {};
  for (const [key, name] of Object.entries(TLS_SETTING) as [keyof RedisTlsFiles, string][]) if (env[name]) files[key] = env[name];
  return Object.keys(files).length > 0 ? files : undefined;
}

/** Whether any TLS setting is given. */
export function hasTlsSettings(files: RedisTlsFiles | undefined): files is RedisTlsFiles {
  return !!files && Object.values(files).some((v) => v !== undefined && v !== '');
}

/**
 * Node's TLS options from the files (read now). Throws a RedisTlsError naming the setting and the
 * path of a file that cannot be read or holds no PEM block, and when a certificate comes without
 * its key (or the other way round).
 */
export function tlsOptions(files: RedisTlsFiles): ConnectionOptions {
  if (!!files.certFile !== !!files.keyFile) throw new RedisTlsError(`${files.certFile ? TLS_SETTING.keyFile : TLS_SETTING.certFile} is missing: a client certificate needs both ${TLS_SETTING.certFile} and ${TLS_SETTING.keyFile}`);
  const read = (key: 'caFile' | 'certFile' | 'keyFile'): string | undefined => {
    const path = files[key];
    if (!path) return undefined;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw new RedisTlsError(`${TLS_SETTING[key]}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    if (!text.includes('-----BEGIN ')) throw new RedisTlsError(`${TLS_SETTING[key]}: ${path} holds no PEM block`);
    return text;
  };
  const options: ConnectionOptions = {};
  const ca = read('caFile');
  const cert = read('certFile');
  const key = read('keyFile');
  if (ca) options.ca = ca;
  if (cert) options.cert = cert;
  if (key) options.key = key;
  if (files.servername) options.servername = files.servername;
  return options;
}

/** Node's codes for a server certificate that does not verify. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * What a TLS failure means for the settings, in words naming the file; null when the error is not
 * about certificates (a refused or lost connection: Redis may come back, so that is retried).
 */
export function tlsProblem(e: unknown, files: RedisTlsFiles | undefined): string | null {
  const err = e as NodeJS.ErrnoException & { reason?: string };
  const code = err?.code ?? '';
  // OpenSSL's messages carry their source position and a newline: the reason alone reads better
  const raw = String(err?.message ?? e);
  const message = (/:(tlsv1\d? alert [^:]+|[a-z ]*certificate[^:]*):/i.exec(raw)?.[1] ?? raw).replace(/\s+/g, ' ').trim();
  // an alert is the server refusing us (our certificate, or none); anything else about certificates is ours refusing it
  if (/\balert\b/i.test(message)) {
    return files?.certFile
      ? `the Redis server refused the client certificate ${TLS_SETTING.certFile}=${files.certFile} (${message})`
      : `the Redis server asks for a client certificate (${message}); set ${TLS_SETTING.certFile} and ${TLS_SETTING.keyFile}`;
  }
  if (UNTRUSTED.has(code) || /certificate|self.signed|altnames/i.test(message)) {
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `the Redis server's certificate does not name this host (${message}); ${TLS_SETTING.servername} sets the name to check`;
    return files?.caFile
      ? `the Redis server's certificate does not verify against ${TLS_SETTING.caFile}=${files.caFile} (${message})`
      : `the Redis server's certificate does not verify against the system's CAs (${message}); ${TLS_SETTING.caFile} names the CA that signed it`;
  }
  return null;
}

/**
 * Connects once over TLS to `host:port` with the files and hangs up: the certificate problem (in
 * words naming the file), or null when the handshake completed or the host could not be reached
 * (not a settings problem). Used at start and by --check-config.
 */
export function checkTlsHandshake(host: string, port: number, files: RedisTlsFiles | undefined, timeoutMs = 3000): Promise<string | null> {
  const options = { host, port, ...tlsOptions(files ?? {}) };
  return new Promise((resolve) => {
    const socket = connect(options);
    let answered = false;
    const done = (problem: string | null) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    // TLS 1.3: a server that wants a client certificate says so after the handshake, with an alert
    // on the first read: wait for it a moment before calling the handshake good.
    socket.once('secureConnect', () => setTimeout(() => done(null), 200));
    // `on`, not `once`: a TLS socket can fail twice (an alert, then a reset); the first one tells
    socket.on('error', (e) => done(tlsProblem(e, files)));
    socket.once('close', () => done(null));
  });
}

/**
 * What a process says while TLS verification is turned off from the environment
 * (NODE_TLS_REJECT_UNAUTHORIZED=0 makes Node accept any certificate, Redis's included), or null.
 * Said in --check-config, in the log at start and in /readyz: never silent.
 */
export function tlsVerificationOff(env: NodeJS.ProcessEnv = process.env): string | null {
  return env.NODE_TLS_REJECT_UNAUTHORIZED === '0' ? 'NODE_TLS_REJECT_UNAUTHORIZED=0: TLS certificates are not verified (any server, Redis included, is believed); unset it' : null;
}
