"""specviz web app: `python app.py` serves on 0.0.0.0:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT override)."""

import os

from specviz.ui import build_app, css

demo = build_app()

if __name__ == "__main__":
    demo.queue(default_concurrency_limit=int(os.environ.get("SPECVIZ_CONCURRENCY", "2")), max_size=64).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        css=css(),
    )
