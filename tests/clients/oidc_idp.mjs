// An OpenID Connect identity provider for the single sign-on tests: the npm registry's
// oidc-provider on a free loopback port, with its own login and consent pages (devInteractions).
// Takes one JSON argument, {client: {client_id, client_secret, redirect_uris}, accounts: {login:
// claims}}, prints one JSON line, {issuer}, once it listens, and serves until it is killed. Only
// the listed logins sign in (with any password), each with its claims (email, email_verified...).
import http from 'node:http';
import Provider from 'oidc-provider';

const { client, accounts } = JSON.parse(process.argv[2]);

async function findAccount(ctx, login) {
  const claims = accounts[login];
  if (!claims) return undefined;
  return {
    accountId: login,
    async claims() {
      return { sub: login, preferred_username: login, ...claims };
    },
  };
}

function configuration() {
  return {
    clients: [
      {
        ...client,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    findAccount,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
    },
    scopes: ['openid', 'email', 'profile'],
    cookies: { keys: ['momor-test-identity-provider'] },
    features: { devInteractions: { enabled: true } },
  };
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration());
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
