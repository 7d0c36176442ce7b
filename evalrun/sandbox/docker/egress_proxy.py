"""The egress gate's proxy: an HTTP proxy that lets a sandbox reach only the hosts its task
allows (Harbor's `allowed_hosts`). It runs in a container of its own, on the sandbox's internal
network and on the public one; the sandbox has only the internal network, so everything it sends
out goes through here or nowhere.

It speaks the two forms clients use through `HTTP_PROXY` / `HTTPS_PROXY`: `CONNECT host:port`
(TLS and any other TCP stream, passed through unread) and an absolute-URI request
(`GET http://host/path`, forwarded with `Connection: close`). A target is allowed when its host
matches an entry of the allow file, re-read for every request (the harness rewrites it between
the agent's phase and the verifier's): a hostname (exactly that name), `*.suffix` (any name
under suffix, not suffix itself), an IP address or a CIDR range (the target as written, never
what a name resolves to, so a name cannot smuggle in an address). Every decision is one line on
stdout (`allow host:port` / `deny host:port`), which the harness reads back into the sample's
record.

Standard library only: it runs on the base image's python3 (`evalrun-base:bookworm`).

    python3 egress_proxy.py ALLOW_FILE [PORT]
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import sys

HEAD_LIMIT = 64 * 1024  # a request line and headers larger than this are refused
CONNECT_TIMEOUT_S = 30


def allowed(host: str, entries: list[str]) -> bool:
    """Whether `host` (a name or an address, as the client wrote it) matches an entry."""
    host = host.strip("[]").lower().rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in entries:
        if address is not None:
            if "/" in entry:
                try:
                    if address in ipaddress.ip_network(entry, strict=False):
                        return True
                except ValueError:
                    pass
            elif entry == str(address):
                return True
        elif entry.startswith("*."):
            if host.endswith(entry[1:]) and len(host) > len(entry) - 1:
                return True
        elif host == entry:
            return True
    return False


def read_entries(path: str) -> list[str]:
    try:
        with open(path) as handle:
            lines = handle.read().split()
    except OSError:
        return []
    return [line.lower().rstrip(".") for line in lines if line]


def split_target(target: str, default_port: int) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`, or a bare host) into (host, port)."""
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif target.count(":") == 1:
        host, port = target.split(":")
    else:
        host, port = target, ""
    return host, int(port) if port else default_port


def parse_url(url: str) -> tuple[str, int, str]:
    """`http://host[:port]/path?q` into (host, port, path)."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() != "http" or not rest:
        raise ValueError("not an http:// URL")
    authority, slash, path = rest.partition("/")
    authority = authority.rpartition("@")[2]
    host, port = split_target(authority, 80)
    return host, port, slash + path or "/"


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction until its end, then pass the end on (the other may still be busy)."""
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


async def refuse(writer: asyncio.StreamWriter, status: str, reason: str) -> None:
    body = (reason + "\n").encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
    try:
        await writer.drain()
    finally:
        writer.close()


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def handle(
    allow_file: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) != 3:
        await refuse(writer, "400 Bad Request", "evalrun egress gate: a malformed request")
        return
    method, target, version = parts
    try:
        if method.upper() == "CONNECT":
            host, port = split_target(target, 443)
            path = None
        else:
            host, port, path = parse_url(target)
    except ValueError:
        await refuse(writer, "400 Bad Request", f"evalrun egress gate: cannot read {target}")
        return
    where = f"{host}:{port}"
    if not allowed(host, read_entries(allow_file)):
        say(f"deny {where}")
        reason = f"evalrun egress gate: {host} is not in the task's allowed_hosts"
        await refuse(writer, "403 Forbidden", reason)
        return
    say(f"allow {where}")
    try:
        upstream = asyncio.open_connection(host, port)
        up_reader, up_writer = await asyncio.wait_for(upstream, CONNECT_TIMEOUT_S)
    except (TimeoutError, OSError) as error:
        await refuse(writer, "502 Bad Gateway", f"evalrun egress gate: {where}: {error}")
        return
    if path is None:
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
    else:
        headers = [
            line
            for line in lines[1:]
            if line and not line.lower().startswith(("proxy-", "connection:", "keep-alive:"))
        ]
        request = "\r\n".join([f"{method} {path} {version}", *headers])
        up_writer.write((request + "\r\nConnection: close\r\n\r\n").encode("latin-1"))
    try:
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    finally:
        for end in (writer, up_writer):
            end.close()


async def serve(allow_file: str, port: int) -> None:
    handler = functools.partial(handle, allow_file)
    server = await asyncio.start_server(handler, "0.0.0.0", port, limit=HEAD_LIMIT)
    say(f"ready {server.sockets[0].getsockname()[1]}")
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3128))
