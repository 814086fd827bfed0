"""Task setup of the coding tasks: writes the repository given as JSON (path -> text) into the current directory.

Run (as the runner does, in the fresh workdir): python3 examples/coding/write-files.py '{"calc.py": "..."}'
"""

import json
import sys
from pathlib import Path

for rel, text in json.loads(sys.argv[1]).items():
    target = Path(rel)
    if target.is_absolute() or ".." in target.parts:
        sys.exit(f"write-files: {rel} is not a path inside the repository")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
