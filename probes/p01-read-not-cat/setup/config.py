"""Server settings."""

HOST = "0.0.0.0"
PORT = 8080
WORKERS = 4
