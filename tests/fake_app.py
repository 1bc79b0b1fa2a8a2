"""The whole app served in this process on scripted models (tests/fakes.py), for queue and load tests that need
Gradio's real queue but no real model: every run loads instantly and each target forward takes FORWARD_S, so a
run of a few dozen tokens lasts a second or two and a class of sessions really queues."""

import contextlib
import functools
import os
import socket
import threading
import time

from specviz.app import progress
from specviz.app.request import PROMPT_LOOKUP, RunRequest
from specviz.decoding import pipeline
from specviz.models.cache import WeightsCache
from tests.fakes import fake_pipeline

FORWARD_S = 0.04  # one target forward of the scripted model: rounds take about this long
CLASS_LANE = 2  # runs served at once, as app.py's default SPECVIZ_CONCURRENCY


def fake_request(prompt: str, seed: int = 0, max_new_tokens: int = 16) -> RunRequest:
    """A Run with prompt lookup (the scripted pipeline drafts by lookup whatever the request names)."""
    return RunRequest(drafter=PROMPT_LOOKUP, prompt=prompt, seed=seed, max_new_tokens=max_new_tokens)


def _slow_pipeline(cache: WeightsCache, config):
    """A scripted pipeline whose target forward sleeps FORWARD_S (on the model thread, as a real one computes). All
    share `cache`, as the app's pipelines share their models: the target's forward is timed once, not every run."""
    pipeline = fake_pipeline(8, drafter="ngram")
    pipeline.cache = cache
    for name in ("feed", "feed_tree"):  # the prompt's forward, and each round's verification
        setattr(pipeline.target, name, _slowed(getattr(pipeline.target, name)))
    return pipeline


def _slowed(forward):
    @functools.wraps(forward)
    def slow_forward(*args, **kwargs):
        time.sleep(FORWARD_S)
        return forward(*args, **kwargs)
    return slow_forward


@contextlib.contextmanager
def serving_fake_app(**environ):
    """Build and launch the app (with `environ` set while it is built, e.g. SPECVIZ_TEACHER_KEY) on a free port of
    127.0.0.1, with app.py's queue settings; yields its URL. Runs load the scripted pipeline."""
    from specviz.app.serving import launch_options
    from specviz.app.ui import build_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    saved = {name: os.environ.get(name) for name in [*environ, "GRADIO_ANALYTICS_ENABLED"]}
    # Run and Step build their pipeline through whichever of these modules names build_pipeline
    builders = {module: module.build_pipeline for module in (progress, pipeline) if hasattr(module, "build_pipeline")}
    os.environ.update({"GRADIO_ANALYTICS_ENABLED": "False", **environ})
    scripted = functools.partial(_slow_pipeline, WeightsCache())
    for module in builders:
        module.build_pipeline = scripted
    demo = None
    try:
        demo = build_app()
        demo.queue(default_concurrency_limit=CLASS_LANE, max_size=64)
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                    **launch_options())  # as app.py serves it
        yield f"http://127.0.0.1:{port}/"
    finally:
        if demo is not None:
            _stop_streams(demo)
            demo.close()
        for module, build in builders.items():
            module.build_pipeline = build
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _stop_streams(demo) -> None:
    """Set the server's stop event on its own event loop: Gradio's close() sets this asyncio.Event from the calling
    thread, which raced the loop's open streams ("deque mutated during iteration", a failed test at teardown)."""
    stop = demo.app.stop_event
    loop = getattr(stop, "_loop", None)  # the loop its waiters wait on; None while nothing has waited on it
    if loop is None or not loop.is_running():
        return
    done = threading.Event()
    loop.call_soon_threadsafe(lambda: (stop.set(), done.set()))
    done.wait(timeout=5)
