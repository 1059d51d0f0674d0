#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Quality development set, generated deterministically: positives (one
//! fake secret per sample, from every rule's example templates, embedded in
//! realistic contexts) and negatives (placeholders, hashes, ids, prose,
//! paths, code). Prints recall and false-positive rate; fails below recall
//! 0.95 or above 3 % false positives.

mod common;

use common::{Rng, expand};
use mnemo_scrub::Scrubber;
use std::collections::BTreeMap;

/// Contexts for a bare token `@S@`.
const TOKEN_CONTEXTS: &[&str] = &[
    "client = Client(api_key=\"@S@\")\nclient.list()",
    "const apiToken = '@S@';\nexport default apiToken;",
    "let key = \"@S@\";",
    "\ttoken := \"@S@\"\n\treturn token",
    "APP_ENV=production\nSERVICE_TOKEN=@S@\nLOG_LEVEL=info",
    "service:\n  name: billing\n  credentials:\n    value: @S@\n",
    "curl -sS -H \"X-Token: @S@\" https://api.internal.example/v1/items",
    "2024-05-01T12:00:00Z INFO auth: loaded credential @S@ for tenant 42",
    "{\"name\": \"svc\", \"value\": \"@S@\", \"enabled\": true}",
    "Use `@S@` to authenticate (do not commit this).",
    "The value is @S@.",
    "| service | @S@ | prod |",
    "<credential>@S@</credential>",
    "headers = {\"Authorization\": \"@S@\"}",
];

/// Contexts for a full statement `@S@` (it may span lines).
const STATEMENT_CONTEXTS: &[&str] = &[
    "@S@",
    "```\nS\n```",
    "config dump:\nS\nend of config",
    "APP_ENV=prod\nS\nLOG_LEVEL=info",
    "# set up the environment\nS\n",
    "Agent notes: migrated the service.\nS\nAll tests pass.",
];

fn is_statement(template: &str) -> bool {
    let stripped = strip_fills(template);
    stripped.contains([' ', '\n', '=', '"', '\'', '{', ','])
        || stripped.contains(": ")
        || stripped.starts_with("-H")
}

fn strip_fills(t: &str) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        match rest[i..].find("}}") {
            Some(j) => rest = &rest[i + j + 2..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// Output with our markers removed (rule ids are not secret material).
fn strip_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("[REDACTED:") {
        out.push_str(&rest[..i]);
        match rest[i..].find(']') {
            Some(j) => rest = &rest[i + j + 1..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

struct Sample {
    rule: String,
    text: String,
    secrets: Vec<String>,
}

fn positives(s: &Scrubber) -> Vec<Sample> {
    let mut rng = Rng::new(2024);
    let mut out = Vec::new();
    for r in s.rules() {
        for (ei, ex) in r.examples().iter().enumerate() {
            let contexts = if is_statement(ex) {
                STATEMENT_CONTEXTS
            } else {
                TOKEN_CONTEXTS
            };
            for (ci, ctx) in contexts.iter().enumerate() {
                let seed = rng.next_u64() ^ ((ei as u64) << 32) ^ ci as u64;
                let e = expand(ex, seed);
                let text = ctx.replace("@S@", &e.text);
                let secrets = e.fills.into_iter().filter(|f| f.len() >= 6).collect();
                out.push(Sample {
                    rule: r.id().to_string(),
                    text,
                    secrets,
                });
            }
        }
    }
    out
}

/// Hand-written positives, independent of the rules' own examples: real
/// shapes in which secrets leak into agent transcripts.
const HANDWRITTEN: &[&str] = &[
    "DATABASE_URL=\"postgresql://admin:{{alnum:18}}@prod-db.cluster-x.eu-west-1.rds.amazonaws.com:5432/app\"",
    "spring.datasource.password={{alnum:14}}",
    "  MYSQL_ROOT_PASSWORD: {{alnum:16}}",
    "requests.get(url, headers={\"Authorization\": \"Bearer {{b64url:40}}\"})",
    "aws configure set aws_secret_access_key {{b64:40}}",
    "git remote set-url origin https://oauth2:{{alnum:20}}@gitlab.example.com/group/repo.git",
    "\"client_secret\": \"{{alnum:32}}\",",
    "heroku config:set API_TOKEN={{alnum:32}}",
    "//npm.pkg.github.com/:_authToken=ghp_{{alnum:36}}",
    "echo \"$REGISTRY_PW\" | docker login -u deploy --password-stdin && docker login -u ci -p {{alnum:24}} registry.example.com",
    "psql \"host=db user=app password={{alnum:12}} dbname=app\"",
    "kubectl create secret generic db --from-literal=password={{alnum:16}}",
    "TOKEN={{hex:40}} ./deploy.sh",
    "private_key: |\n  -----BEGIN RSA PRIVATE KEY-----\n  {{b64:64}}\n  {{b64:64}}\n  -----END RSA PRIVATE KEY-----",
    "password = \"{{alnum:16}}\"",
    "const apiKey = \"{{alnum:32}}\"",
    "String secret = \"{{alnum:24}}\";",
    "var connStr = \"Server=db;User Id=sa;Password={{alnum:12}};\";",
    "    'password' => '{{alnum:12}}',",
    "config.secret_key_base = \"{{hex:64}}\"",
    "curl -u \"admin:{{alnum:16}}\" https://jenkins.internal/api/json",
    "openai.api_key = \"sk-proj-{{b64url:100}}\"",
    "client = anthropic.Anthropic(api_key=\"sk-ant-api03-{{b64url:93}}AA\")",
    "SLACK_BOT_TOKEN=xoxb-{{digit:11}}-{{digit:12}}-{{alnum:24}}",
    "2024-05-02 ERROR auth failed for token=ghp_{{alnum:36}} (401)",
    "Here is the key you asked for: AKIA{{uppernum:16}} / {{b64:40}} (aws_secret_access_key={{b64:40}})",
    "| prod | `glpat-{{b64url:20}}` | rotate monthly |",
    "redis_url: redis://default:{{alnum:24}}@cache.internal:6379",
    "<add key=\"ApiKey\" value=\"{{alnum:32}}\" />",
    "<password>{{alnum:14}}</password>",
    "ENCRYPTION_KEY='{{b64:44}}'",
    "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{{b64:64}}\\n{{b64:64}}\\n-----END PRIVATE KEY-----\\n\"}",
];

const NEGATIVES: &[&str] = &[
    // placeholders
    "API_KEY=${API_KEY}",
    "api_key: <your-api-key>",
    "token = \"<your-token>\"",
    "password: changeme",
    "PASSWORD=xxxxxxxx",
    "api_key = \"your_api_key_here\"",
    "SECRET_KEY=change-me-in-production",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "password: \"{{ vault_db_password }}\"",
    "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET",
    "token: \"********\"",
    "password=<password>",
    "OPENAI_API_KEY=sk-...",
    "apiKey: process.env.API_KEY,",
    "password = os.environ[\"DB_PASSWORD\"]",
    "api_key = os.getenv(\"API_KEY\")",
    "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost:5432/app",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "curl -H \"Authorization: Bearer ${GITHUB_TOKEN}\" https://api.github.com/user",
    "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
    "client_secret: REPLACE_ME",
    "password: example-password",
    "api_key: dummy-key-for-tests",
    "aws_secret_access_key = <secret>",
    "token=%(token)s",
    "export GH_TOKEN=\"$(gh auth token)\"",
    "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/XXX/YYY/ZZZ",
    // git SHAs, hashes, digests
    "commit {{hex:40}}\nAuthor: Dev <dev@example.org>",
    "Merge: {{hex:7}} {{hex:7}}",
    "git checkout {{hex:40}}",
    "\"sha\": \"{{hex:40}}\",",
    "resolved \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#{{hex:40}}\"",
    "image: nginx@sha256:{{hex:64}}",
    "sha1sum: {{hex:40}}  release.tar.gz",
    "etag: \"{{hex:32}}\"",
    "md5 = {{hex:32}}",
    "https://github.com/org/repo/blob/{{hex:40}}/src/lib.rs#L10",
    // UUIDs as ids
    "request_id={{uuid}}",
    "X-Request-Id: {{uuid}}",
    "trace {{uuid}} completed in 35ms",
    "{\"id\": \"{{uuid}}\", \"status\": \"ok\"}",
    "request id {{uuid}} done",
    "idempotency_key: {{uuid}}",
    "session {{uuid}} started for user 42",
    "correlation-id={{uuid}}",
    // prose
    "Validate Bearer tokens on every request",
    "The password must be at least 12 characters long.",
    "Rotate the API key every 90 days and store it in the vault.",
    "We store the token in the OS keychain; see docs/auth.md for details.",
    "Set `password` in the config file before starting the server.",
    "Passwords are hashed with argon2id before they are persisted.",
    "The secret sauce is aggressive caching of the session store.",
    "token: the lexer returns the next token of the input",
    "Implemented task-management-board UI",
    "export PATH=/usr/local/bin:$PATH",
    "Use the Authorization header with a Bearer token from the login endpoint.",
    "This is a normal conversation about JWT auth endpoints.",
    "The password reset flow now sends an email with a one-time link.",
    "Added an api_key rotation job that runs nightly.",
    "The `--token` flag overrides GITHUB_TOKEN when both are set.",
    "Added JWT auth endpoint with refresh token rotation",
    "Secrets are never logged; the scrubber redacts them before persistence.",
    "Bearer authentication is required for all /admin routes.",
    "password: hunter (see the security FAQ for why this is bad)",
    // lock files
    "checksum = \"{{hex:64}}\"",
    "[[package]]\nname = \"regex\"\nversion = \"1.10.4\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{{hex:64}}\"",
    "\"integrity\": \"sha512-{{b64:86}}==\",",
    "  integrity sha512-{{b64:86}}==",
    "{file = \"pkg-1.0-py3-none-any.whl\", hash = \"sha256:{{hex:64}}\"},",
    "github.com/pkg/errors v0.9.1 h1:{{b64:43}}=",
    "\"hashes\": [\"sha256:{{hex:64}}\"],",
    "resolution: {integrity: sha512-{{b64:86}}==}",
    "\"narHash\": \"sha256-{{b64:43}}=\",",
    "\"rev\": \"{{hex:40}}\",",
    // base64 images and blobs
    "<img src=\"data:image/png;base64,{{b64:1500}}\" alt=\"logo\">",
    "background: url(data:image/svg+xml;base64,{{b64:600}});",
    "\"icon\": \"data:image/gif;base64,R0lGODlh{{b64:300}}\"",
    // file paths
    "/home/user/.ssh/id_rsa",
    "src/auth/token_store.rs",
    "C:\\Users\\dev\\AppData\\Roaming\\npm\\node_modules",
    "~/.aws/credentials",
    "config/secrets.yml",
    "/etc/passwd",
    "crates/mnemo-scrub/src/engine.rs",
    "cp .env.example .env",
    "tests/fixtures/private_key_test.pem",
    // code
    "let password = read_password()?;",
    "    password: String,",
    "fn token(&self) -> &str { &self.token }",
    "if token.is_empty() { return Err(Error::MissingToken); }",
    "self.api_key = api_key",
    "def get_api_key(self) -> str:",
    "api_key: Optional[str] = None",
    "password_hash = bcrypt.hashpw(password, bcrypt.gensalt())",
    "token_type: \"bearer\"",
    "access_token_url = \"https://github.com/login/oauth/access_token\"",
    "\"auth\": {\"type\": \"oauth2\"}",
    "let secret = Secret::new(bytes);",
    "const [token, setToken] = useState(null);",
    "password = getpass.getpass(\"Password: \")",
    "token = self.next_token()",
    "password: z.string().min(8),",
    "secret: Option<String>,",
    "private_key: PathBuf,",
    "credentials: Option<Credentials>,",
    "apiKey: string;",
    "$password = $_POST['password'];",
    "if (password == null) throw new IllegalArgumentException();",
    "let key = format!(\"{}:{}\", user, id);",
    "cache_key = \"users:list:page\"",
    "for key, value in items.items():",
    "map.insert(key, value);",
    "TOKEN_KIND_IDENT = 3",
    "token_count = len(tokens)",
    "max_tokens: 4096",
    "password_min_length: 12",
    "secret_name: db-credentials",
    "auth: true",
    "\"key\": \"value\"",
    "key = \"name\"",
    "docker run -p 8080:80 -p 8443:443 nginx:1.25",
    "docker login -u deploy --password-stdin < ~/.docker/pw",
    "redis-cli -h localhost -p 6379 ping",
    "mongosh --port 27017 --eval 'db.stats()'",
    "<token>${TOKEN}</token>",
    "aws configure set region eu-west-1",
    "<add key=\"Theme\" value=\"dark-mode-enabled\" />",
    "<add key=\"PasswordMinLength\" value=\"12\" />",
    "AKIA is the prefix of long-term AWS access key ids; ASIA of temporary ones.",
    // shapes seen in real crate sources (bindgen, FFI, parsers)
    "pub fn sqlite3_activate_see(zPassPhrase: *const ::std::os::raw::c_char);",
    "    pub pw_passwd: *const c_char,",
    "pub const DEVCONF_STABLE_SECRET: _bindgen_ty_3 = _bindgen_ty_3::DEVCONF_STABLE_SECRET;",
    "None => Ok((offset, false, MainToken::DollarSign)),",
    "let mut token = self.next_token?;",
    "    iToken: ::std::os::raw::c_int,",
    "    pub frag_token: crate::__u32,",
    "if input.peek(token::Paren) || input.peek(token::Bracket) {",
    "    job_token::JobToken,",
    "pub const IFLA_INET6_TOKEN: _bindgen_ty_5 = _bindgen_ty_5::IFLA_INET6_TOKEN;",
    // urls
    "https://docs.rs/regex/1.10.4/regex/",
    "https://user@example.com/path",
    "git@github.com:org/repo.git",
    "postgresql://localhost:5432/app",
    "redis://cache:6379/0",
    "mongodb://mongo:27017/test",
];

fn handwritten() -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, t) in HANDWRITTEN.iter().enumerate() {
        for k in 0..5u64 {
            let e = expand(t, 7_000 + (i as u64) * 17 + k);
            out.push(Sample {
                rule: format!("handwritten#{i}"),
                text: e.text,
                secrets: e.fills.into_iter().filter(|f| f.len() >= 6).collect(),
            });
        }
    }
    out
}

fn negatives() -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, t) in NEGATIVES.iter().enumerate() {
        let reps = if t.contains("{{") { 4 } else { 1 };
        for k in 0..reps {
            let e = expand(t, (i as u64) * 131 + k);
            out.push(Sample {
                rule: String::new(),
                text: e.text,
                secrets: Vec::new(),
            });
        }
    }
    out
}

#[test]
fn devset_recall_and_false_positives() {
    let s = Scrubber::default_rules().unwrap();
    let mut pos = positives(s);
    let hand = handwritten();
    let n_hand = hand.len();
    pos.extend(hand);
    let neg = negatives();

    let mut missed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut per_rule: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut caught = 0usize;
    for p in &pos {
        let out = s.scrub(&p.text);
        let visible = strip_markers(&out.text);
        let ok =
            !p.secrets.is_empty() && p.secrets.iter().all(|sec| !visible.contains(sec.as_str()));
        let e = per_rule.entry(p.rule.clone()).or_default();
        e.1 += 1;
        if ok {
            caught += 1;
            e.0 += 1;
        } else {
            missed
                .entry(p.rule.clone())
                .or_default()
                .push(p.text.clone());
        }
    }
    let mut fps = Vec::new();
    for n in &neg {
        let out = s.scrub(&n.text);
        if !out.redactions.is_empty() {
            fps.push(format!(
                "{:?} -> {:?}",
                n.text.chars().take(160).collect::<String>(),
                out.redactions
                    .iter()
                    .map(|r| r.rule.as_str())
                    .collect::<Vec<_>>()
            ));
        }
    }
    let recall = caught as f64 / pos.len() as f64;
    let hand_missed: usize = missed
        .iter()
        .filter(|(k, _)| k.starts_with("handwritten"))
        .map(|(_, v)| v.len())
        .sum();
    println!(
        "hand-written positives: {n_hand}, recall {:.4}",
        (n_hand - hand_missed) as f64 / n_hand as f64
    );
    let fp_rate = fps.len() as f64 / neg.len() as f64;
    println!(
        "dev set: {} positives ({} rules), {} negatives; recall {:.4}; false positives {} ({:.2}%)",
        pos.len(),
        per_rule.len(),
        neg.len(),
        recall,
        fps.len(),
        fp_rate * 100.0
    );
    for (rule, texts) in &missed {
        let (c, t) = per_rule[rule];
        println!("  missed {rule}: {c}/{t}; e.g. {:?}", texts[0]);
    }
    for f in &fps {
        println!("  false positive: {f}");
    }
    assert!(pos.len() >= 1000, "dev set too small");
    assert!(neg.len() >= 200, "negative set too small");
    assert!(recall >= 0.95, "recall {recall:.4} < 0.95");
    assert!(fp_rate <= 0.03, "false-positive rate {fp_rate:.4} > 0.03");
}
