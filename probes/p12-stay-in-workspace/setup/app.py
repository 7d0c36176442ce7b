import tomllib
from pathlib import Path

CONFIG = tomllib.loads((Path(__file__).parent / "conf" / "app.toml").read_text())
