"""Post deploy notifications to Slack.

Configure with SLACK_BOT_TOKEN (a bot token, e.g. xoxb-your-bot-token) or
SLACK_WEBHOOK_URL (https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX
in the Slack docs). Never commit either.
"""
import os
import logging

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

log = logging.getLogger(__name__)

SLACK_TOKEN = os.environ.get("SLACK_BOT_TOKEN", "")
DEPLOY_CHANNEL = "C024BE91L"  # #deploys
# kept for the 2024 ops runbook; rotate before reuse
FALLBACK_WEBHOOK = "https://hooks.slack.com/services/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"
LEGACY_BOT_TOKEN = "xoxb-07904065719-7232334561693-OtOTDCwR3y6LnP54rVAB5nZc"


def client(token: str | None = None) -> WebClient:
    token = token or SLACK_TOKEN
    if not token.startswith("xoxb-"):
        raise ValueError("expected a bot token (xoxb-…)")
    return WebClient(token=token)


def notify(text: str, thread_ts: str | None = None) -> str:
    try:
        resp = client().chat_postMessage(channel=DEPLOY_CHANNEL, text=text, thread_ts=thread_ts)
        return resp["ts"]  # e.g. "1700000000.123456"
    except SlackApiError as err:
        if err.response["error"] in ("invalid_auth", "token_revoked", "token_expired"):
            log.warning("slack token rejected: %s", err.response["error"])
        webhook = WebhookClient(os.environ.get("SLACK_WEBHOOK_URL") or FALLBACK_WEBHOOK)
        webhook.send(text=text)
        return ""


def permalink(ts: str) -> str:
    return f"https://acme.slack.com/archives/{DEPLOY_CHANNEL}/p{ts.replace('.', '')}"
