from src.timeutil import parse_duration


def timeout_for(job: dict) -> int:
    return parse_duration(job.get("timeout", "30s"))
