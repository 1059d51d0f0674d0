-- create application roles
CREATE ROLE reporting WITH LOGIN PASSWORD 'Qx7GjcvcepXRAuNs';
GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;
CREATE USER 'etl'@'%' IDENTIFIED BY 'HDb9AH3GH7EU#7';
ALTER TABLE orders ADD COLUMN password_reset_token_hash TEXT;
