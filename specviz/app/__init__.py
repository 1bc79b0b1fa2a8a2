"""The Gradio app: the only package that imports gradio."""
