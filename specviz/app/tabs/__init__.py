"""The app's tabs after the live one, a module each, named as the tab is; groups.py lists them."""
