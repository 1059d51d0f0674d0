-- migrations/0007_accounts.sql
CREATE TABLE accounts (
    id            BIGSERIAL PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    password_hash VARCHAR(255) NOT NULL,
    reset_token   UUID,
    token_expires TIMESTAMPTZ
);

CREATE TABLE sessions (
    token      TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX sessions_account ON sessions (account_id);

-- name: FindSession :one
SELECT account_id FROM sessions WHERE token = $1 AND created_at > now() - interval '1 day';

-- read-only role for the reporting dashboards
CREATE ROLE reporting LOGIN PASSWORD 'aNyuyQBsNTEv';
GRANT SELECT ON accounts, sessions TO reporting;
REVOKE SELECT (password_hash, reset_token) ON accounts FROM reporting;
