def render(rows: list[dict]) -> str:
    return "\n".join(f"{r['name']}: {r['status']}" for r in rows)
