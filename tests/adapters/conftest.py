import sys
from pathlib import Path

# `tests.fixtures.expected` is imported as a package path; pytest puts only tests/ dirs on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
