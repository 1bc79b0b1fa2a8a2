"""The teaching labs: pure functions behind the app's lab tabs (theory, sampling, simulated models, memory
bandwidth, losslessness). Each lab keeps its numbers in `<lab>.py` and its plotly views in `<lab>_figures.py`."""
