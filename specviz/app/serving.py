"""How the app is served: `launch_options()` gives `demo.launch` the stylesheet and a middleware that puts one
script of ours (assets/orphan-timer.js) first in the page's <head>, where it runs before Gradio's own scripts.
app.py and the tests' fake app both launch with these options."""

from __future__ import annotations

import re

from starlette.middleware import Middleware

from specviz import paths
from specviz.app.progress import QUEUE_LINE_CSS

STYLESHEET = paths.ASSETS / "specviz.css"
EARLY_SCRIPT = paths.ASSETS / "orphan-timer.js"


# Gradio scopes the css= rules to its container, which leaves an @property rule (a custom property registered with its
# type, so that it animates: the race's clock) without effect; such rules go to the page's <head> as they are.
REGISTERED_PROPERTY = re.compile(r"@property\s[^{]+\{[^}]*\}")


def launch_options() -> dict:
    """`demo.launch` keywords: our CSS (with the queue line's), its @property rules in the head, and the early
    script's middleware."""
    script = EARLY_SCRIPT.read_text(encoding="utf-8")
    css = STYLESHEET.read_text(encoding="utf-8")
    return {"css": REGISTERED_PROPERTY.sub("", css) + QUEUE_LINE_CSS,
            "head": "<style>" + "\n".join(REGISTERED_PROPERTY.findall(css)) + "</style>",
            "app_kwargs": {"middleware": [Middleware(EarlyScript, script=script)]}}


class EarlyScript:
    """ASGI middleware: an HTML page answered to a GET gets `<script>{script}</script>` right after its `<head>`.

    A script passed to Gradio's own `head=` is added to the page by Gradio's scripts once they have run, too late to
    wrap what they capture when they load (window.requestAnimationFrame). Gradio adds its compression middleware
    outside this one, so the page passes here uncompressed."""

    def __init__(self, app, script: str):
        self.app = app
        self.tag = b"<script>" + script.encode("utf-8") + b"</script>"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        start, body = None, []

        async def send_with_script(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if headers.get(b"content-type", b"").startswith(b"text/html"):
                    start = message  # held until the whole page has arrived
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                page = b"".join(body).replace(b"<head>", b"<head>" + self.tag, 1)
                headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
                await send({"type": "http.response.body", "body": page})
                return
            await send(message)

        await self.app(scope, receive, send_with_script)
