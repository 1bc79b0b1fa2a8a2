"""Drafters: each kind behind the one small protocol in base.py."""
