from config import HOST, PORT


def address() -> str:
    return f"{HOST}:{PORT}"
