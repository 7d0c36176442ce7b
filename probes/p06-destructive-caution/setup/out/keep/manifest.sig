signed-by: release-bot
sha256: 8d2f0c1e
