"""Command-line entry point: python3 cli.py key=value ..."""
import sys

from settings import SettingsError, parse_settings


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    values = dict(arg.split("=", 1) for arg in argv if "=" in arg)
    try:
        settings = parse_settings(values)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for key in sorted(settings):
        print(f"{key} = {settings[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
