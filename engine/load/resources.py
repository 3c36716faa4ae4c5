"""Find the shipped rules/, knowledge/ and templates/ folders.

In a wheel they are packaged inside ``engine/_data``; in a checkout or an
editable install they are the top-level folders beside ``engine/``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir(name: str) -> Path:
    """The shipped folder of that name (rules, knowledge or templates)."""
    packaged = resources.files("engine") / "_data" / name
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"cannot find the shipped '{name}' folder (looked in {packaged} and {checkout})")
