from app.text.helpers import slugify


def page_url(title: str) -> str:
    return "/pages/" + slugify(title)
