// A real OpenID Connect provider (npm oidc-provider, OpenID-certified) on
// loopback, for the portal's tests and for local development. The portal is
// a relying party of the customers' identity providers; this stands in for
// them, so the tests exercise the same protocol a production IdP speaks.
//
// Usage: node idp.mjs [--port N] [--host ADDR] [--issuer URL] [--config FILE]
// (or the environment variables PORT, IDP_HOST, ISSUER, IDP_CONFIG). Port 0, the
// default, binds a free port chosen by the kernel, so that parallel tests
// never race for one; the issuer defaults to http://127.0.0.1:<port>. The
// host defaults to loopback; deploy/compose.yaml binds 0.0.0.0 inside its
// container so that the published port reaches it.
// When it serves, the process prints one line "READY <issuer>" on stdout.
//
// The config file is JSON:
//   {
//     "clients": [ oidc-provider client metadata, e.g.
//       {"client_id": "web", "client_secret": "s", "redirect_uris": [...],
//        "token_endpoint_auth_method": "client_secret_basic"},
//       {"client_id": "app", "application_type": "native",
//        "token_endpoint_auth_method": "none",
//        "redirect_uris": ["de.schedbridge.portal:/callback"]} ],
//     "accounts": [ {"sub": "u1", "email": "a@example.test",
//                    "email_verified": true, "name": "A",
//                    "groups": ["optional", "group", "names"]} ],
//     "ttl": { optional overrides in seconds, e.g. "AuthorizationCode": 60 },
//     "resources": { resource servers for machine clients, by audience, e.g.
//       "https://schedbridge.test": {"scope": "schedbridge:data schedbridge:process",
//                                    "ttl": 300} }
//   }
// Clients get response_types ["code"] and grant_types
// ["authorization_code"] unless they say otherwise; PKCE (S256) is required
// of every client that uses the authorization code.
//
// Machine clients (grant_types ["client_credentials"], response_types [])
// get access tokens for a resource server named by the "resource"
// parameter (RFC 8707): JWTs after RFC 9068 (typ at+jwt, RS256), whose aud
// is the resource and whose scope is what the client asked for within the
// resource server's scopes. An unknown resource is refused (invalid_target).
//
// Logins: GET /interaction/<uid> shows a form with the fields "login" and
// "password"; "login" is an account's sub or email (email case-insensitive)
// and any password is accepted. These clients are first-party, so there is
// no consent screen: loadExistingGrant grants what the request asks for.
// GET /interaction/<uid>/abort ends the request with access_denied, as a
// user pressing "Cancel" would.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import { importPackage } from './npm.mjs';

const { default: Provider, errors } = await importPackage('oidc-provider');

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '0' },
    host: { type: 'string', default: process.env.IDP_HOST ?? '127.0.0.1' },
    issuer: { type: 'string', default: process.env.ISSUER ?? '' },
    config: { type: 'string', default: process.env.IDP_CONFIG ?? '' },
  },
});

const config = args.config ? JSON.parse(readFileSync(args.config, 'utf8')) : {};
const accounts = config.accounts ?? [];
const resources = config.resources ?? {};

// findLogin resolves what a person types into the login field.
function findLogin(login) {
  const l = String(login ?? '').trim();
  return accounts.find((a) => a.sub === l)
    ?? accounts.find((a) => a.email && a.email.toLowerCase() === l.toLowerCase());
}

const clients = (config.clients ?? []).map((c) => ({
  response_types: ['code'],
  grant_types: ['authorization_code'],
  ...c,
}));

// A fresh signing key per process: tests must fetch the JWKS as a relying
// party does in production instead of trusting a key baked into the code.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: randomBytes(8).toString('hex'),
  alg: 'RS256',
  use: 'sig',
};

function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(uid, clientId, error) {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body>
<h1>Sign in to ${escapeHTML(clientId)}</h1>
${error ? `<p class="error" role="alert">${escapeHTML(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHTML(uid)}/login" autocomplete="off">
<label>Login <input name="login" autofocus></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button>
</form>
<a href="/interaction/${escapeHTML(uid)}/abort">Cancel</a>
</body></html>
`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 64 * 1024) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

function send(res, status, type, body) {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}

// grantAll records on a grant every scope and claim the request asked for.
function grantAll(grant, scopes, claims) {
  if (scopes.length) grant.addOIDCScope(scopes.join(' '));
  if (claims.length) grant.addOIDCClaims(claims);
}

const server = createServer();
server.listen(Number(args.port), args.host, () => {
  const { port } = server.address();
  const issuer = args.issuer || `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, {
    clients,
    jwks: { keys: [signingKey] },
    async findAccount(ctx, id) {
      const a = accounts.find((x) => x.sub === id);
      if (!a) return undefined;
      return {
        accountId: a.sub,
        async claims() {
          return {
            sub: a.sub,
            email: a.email,
            // An account without the key gets no claim, as some
            // providers never send it.
            ...('email_verified' in a ? { email_verified: Boolean(a.email_verified) } : {}),
            name: a.name,
            ...(a.groups ? { groups: a.groups } : {}),
          };
        },
      };
    },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      // groups rides on profile, as enterprise providers put group
      // memberships into the ID token without a scope of their own.
      profile: ['name', 'groups'],
    },
    scopes: ['openid', 'email', 'profile'],
    // Relying parties commonly read email and name from the ID token (most
    // public IdPs put them there), so the test IdP does too.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Without a resource parameter a token is for the userinfo
        // endpoint, as before; machine clients name their resource.
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        async getResourceServerInfo(ctx, resourceIndicator) {
          const r = resources[resourceIndicator];
          if (!r) throw new errors.InvalidTarget();
          return {
            scope: r.scope ?? '',
            audience: resourceIndicator,
            accessTokenTTL: r.ttl ?? 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      ...(config.ttl ?? {}),
    },
    // First-party clients: grant whatever the request asks for instead of
    // asking the person to consent.
    async loadExistingGrant(ctx) {
      const { oidc } = ctx;
      const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
      let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      if (!grant) {
        grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
      }
      grantAll(grant, [...oidc.requestParamScopes], [...oidc.requestParamClaims]);
      await grant.save();
      return grant;
    },
    renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = `<!DOCTYPE html><html><body><h1>Error</h1><pre class="error">${escapeHTML(JSON.stringify(out))}</pre></body></html>`;
    },
  });
  // The tests reach the IdP over plain HTTP on loopback.
  provider.proxy = false;
  const handle = provider.callback();

  async function interaction(req, res, uid, action) {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) {
      send(res, 400, 'text/plain', 'interaction does not match its cookie\n');
      return;
    }
    const clientId = details.params.client_id;
    if (action === 'abort') {
      await provider.interactionFinished(req, res, {
        error: 'access_denied', error_description: 'the user cancelled the sign-in',
      }, { mergeWithLastSubmission: false });
      return;
    }
    if (details.prompt.name === 'consent') {
      // Reached only when a request insists on consent (prompt=consent);
      // first-party clients get it granted without a screen.
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ clientId, accountId: details.session.accountId });
      const d = details.prompt.details;
      grantAll(grant, (d.missingOIDCScope ?? []), (d.missingOIDCClaims ?? []));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }
    if (action === 'login' && req.method === 'POST') {
      const form = await readForm(req);
      const account = findLogin(form.get('login'));
      if (!account) {
        send(res, 200, 'text/html; charset=utf-8', loginPage(uid, clientId, `unknown account ${form.get('login') ?? ''}`));
        return;
      }
      await provider.interactionFinished(req, res, { login: { accountId: account.sub } }, { mergeWithLastSubmission: false });
      return;
    }
    if (action === '' && req.method === 'GET') {
      send(res, 200, 'text/html; charset=utf-8', loginPage(uid, clientId, ''));
      return;
    }
    send(res, 405, 'text/plain', 'method not allowed\n');
  }

  server.on('request', (req, res) => {
    const m = /^\/interaction\/([^/?]+)(?:\/(login|abort))?(?:\?.*)?$/.exec(req.url);
    if (!m) {
      handle(req, res);
      return;
    }
    interaction(req, res, m[1], m[2] ?? '').catch((err) => {
      if (!res.headersSent) {
        send(res, err.statusCode ?? 500, 'text/plain', `${err.name}: ${err.message}\n`);
      } else {
        res.end();
      }
    });
  });
  process.stdout.write(`READY ${issuer}\n`);
});

server.on('error', (err) => {
  console.error(`idp: ${err.message}`);
  process.exit(1);
});

// The tests stop the IdP with SIGTERM (or by killing its process group).
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => process.exit(0));
}
