"""specviz web app: `python app.py` serves http://127.0.0.1:7860, this machine only.

Open it to other machines (a classroom's network) with `python app.py --host 0.0.0.0`, or GRADIO_SERVER_NAME=0.0.0.0;
on a Hugging Face Space (SPACE_ID is set there) it listens on every interface by itself. `--port` or
GRADIO_SERVER_PORT changes the port. The Custom pair loads local folders from one models directory only
(SPECVIZ_MODELS_DIR, by default the specviz cache; specviz/app/policy.py).

Queue: SPECVIZ_CONCURRENCY runs at once (default 2; all model work shares one thread, so more only interleaves
rounds), SPECVIZ_QUEUE_SIZE waiting at most (default 64; beyond it a visitor is told the queue is full).
A Run waiting in the queue shows its place and Gradio's estimate on the status line (specviz/app/progress.py).
SPECVIZ_TEACHER_KEY (12 characters or more) adds a Teacher sidebar: the key typed there unlocks a Run and a Step
on a lane of their own, which never wait behind the class (specviz/app/teacher.py; docs/hosting.md).
SPECVIZ_HOSTED=1 turns on hosted mode (specviz/app/policy.py). Uploads over 20 MB are refused by Gradio itself.
On a Space (SPACE_ID set), or with SPECVIZ_WARM_UP=1, the default model is warmed up in the background as the server
starts (SPECVIZ_WARM_UP=0: not); torch's CPU threads are sized to the container's CPU quota (specviz/models/threads.py).
"""

import argparse
import os

from specviz.app import warmup
from specviz.app.pair_menu import default_pair
from specviz.app.policy import current_policy, listen_host
from specviz.app.request import RunRequest
from specviz.app.serving import launch_options
from specviz.app.ui import build_app
from specviz.models.threads import size_torch_threads

QUEUE_POLL_S = 0.02  # see below
MAX_UPLOAD = "20mb"  # a trace is far smaller; trace_files.MAX_TRACE_BYTES checks again

demo = build_app()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python app.py", description="The specviz web app.")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0: every "
                                       "interface; GRADIO_SERVER_NAME sets it too)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    return parser.parse_args(argv)


def warm_up_default_model() -> None:
    """On a Space (SPACE_ID) or with SPECVIZ_WARM_UP=1: build and time the model a default Run asks for, in the
    background, so the first visitor does not wait for the download and conversion (specviz/app/warmup.py)."""
    if warmup.wanted():
        warmup.WARM_UP.start(RunRequest(pair=default_pair()).to_config(current_policy()))


if __name__ == "__main__":
    args = parse_args()
    size_torch_threads()  # torch's threads to the container's CPU quota, before any model work
    warm_up_default_model()
    demo.queue(default_concurrency_limit=int(os.environ.get("SPECVIZ_CONCURRENCY", "2")),
               max_size=int(os.environ.get("SPECVIZ_QUEUE_SIZE", "64")))
    # Gradio's queue looks for new work every 1 ms and for progress every 10 ms. On a 2-core CPU those wake-ups slowed
    # the model's two OpenMP threads by ~10% during every run (python -m specviz.bench.app_overhead: engine 8.1 s in the server
    # against 7.3 s alone). Every 20 ms is still instant to a person and removes the slowdown.
    for setting in ("sleep_when_free", "progress_update_sleep_when_free"):
        if hasattr(demo._queue, setting):
            setattr(demo._queue, setting, QUEUE_POLL_S)
    demo.launch(
        server_name=listen_host(args.host),
        server_port=args.port,
        **launch_options(),  # our CSS, and a script that must run before Gradio's (specviz/app/serving.py)
        max_file_size=MAX_UPLOAD,
    )
