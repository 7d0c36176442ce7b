from evalrun.redact import MASK, is_secret_key, redact


def test_secret_names():
    for name in ("api_key", "OPENAI_API_KEY", "Modal-Secret", "Authorization", "token", "password"):
        assert is_secret_key(name), name
    for name in ("api_key_env", "max_tokens", "keyboard", "monkey", "tokens_in", "name"):
        assert not is_secret_key(name), name


def test_redact_masks_nested_values_and_keeps_the_rest():
    config = {
        "provider": {"api_key": "sk-123", "api_key_env": "OPENAI_API_KEY", "model": "m"},
        "headers": [{"Authorization": "Bearer x"}],
        "token": None,
    }
    out = redact(config)
    assert out["provider"] == {"api_key": MASK, "api_key_env": "OPENAI_API_KEY", "model": "m"}
    assert out["headers"] == [{"Authorization": MASK}]
    assert out["token"] is None
    assert config["provider"]["api_key"] == "sk-123"  # the input is not modified
