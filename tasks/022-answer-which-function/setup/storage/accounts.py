from dataclasses import dataclass, field


@dataclass
class Account:
    id: str
    plan: str = "free"            # free | team | unlimited
    quota_bytes: int = 5 * 1024**3
    used_bytes: int = 0
    monthly_egress_bytes: int = 0
    objects: dict = field(default_factory=dict)


PLAN_QUOTAS = {
    "free": 5 * 1024**3,
    "team": 1024**4,
    "unlimited": None,
}
