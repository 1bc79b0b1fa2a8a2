"""The app is served with our stylesheet and an early script (specviz/app/serving.py): the script lands first in an
HTML page's <head>, before any script of the page's own, and nothing else a server answers changes."""

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from specviz.app.serving import EARLY_SCRIPT, EarlyScript, launch_options

PAGE = "<!doctype html><html><head><script type='module' src='gradio.js'></script></head><body>é</body></html>"


def _client(script: str = "window.early = 1;") -> TestClient:
    async def page(request):
        return HTMLResponse(PAGE)

    async def data(request):
        return JSONResponse({"head": "<head>"})

    routes = [Route("/", page, methods=["GET", "POST"]), Route("/data", data)]
    return TestClient(Starlette(routes=routes, middleware=[Middleware(EarlyScript, script=script)]))


def test_the_early_script_comes_first_in_the_head_and_the_length_counts_it():
    answer = _client().get("/")
    assert answer.status_code == 200
    assert answer.text.startswith("<!doctype html><html><head><script>window.early = 1;</script><script type='module'")
    assert answer.text.count("window.early") == 1 and answer.text.endswith("<body>é</body></html>")
    assert int(answer.headers["content-length"]) == len(answer.content) == len(PAGE.encode()) + len(
        "<script>window.early = 1;</script>")


def test_other_answers_pass_unchanged():
    client = _client()
    assert client.get("/data").json() == {"head": "<head>"}  # not HTML
    assert client.post("/").text == PAGE  # not a GET


def test_the_launch_options_carry_the_stylesheet_and_the_shipped_script():
    options = launch_options()
    assert ".sv-tok" in options["css"] and "#sv-status .wrap.minimal" in options["css"]
    (middleware,) = options["app_kwargs"]["middleware"]
    assert middleware.cls is EarlyScript
    assert middleware.kwargs["script"] == EARLY_SCRIPT.read_text(encoding="utf-8")
    assert "requestAnimationFrame" in middleware.kwargs["script"]
