"""The in-sandbox half of the gateway: 127.0.0.1:<port> -> the sample's unix socket.

Copied into the sandbox and run with the sandbox's own python3 (standard library only) next to
the agent, in the same command, so it shares the agent's network namespace - which has only a
loopback. It opens nothing but that loopback listener and the one socket it is given.

    python3 forwarder.py <unix-socket> <port-file>

It writes the port it listens on to <port-file> (atomically) and serves until killed, which
happens when the agent's command ends (the sandbox kills the whole process tree).
"""

import contextlib
import os
import socket
import sys
import threading


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def serve(client, path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main():
    path, port_file = sys.argv[1], sys.argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    staged = port_file + ".tmp"
    with open(staged, "w") as handle:
        handle.write(str(listener.getsockname()[1]))
    os.replace(staged, port_file)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client, path), daemon=True).start()


if __name__ == "__main__":
    main()
