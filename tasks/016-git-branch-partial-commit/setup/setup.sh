# Build a small repo with history on main plus a dirty working tree.
set -e
git init -q -b main
git config core.autocrlf false
echo setup.sh >> .git/info/exclude
commit() {  # commit <date> <message>
  GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2"
}
mkdir -p src tests
printf '__pycache__/\n*.pyc\n' > .gitignore

cat > README.md <<'EOF'
# gatekeeper

Tiny request throttling helpers for our internal APIs.

- `src/ratelimit.py` - token-bucket limiter
- `src/config.py` - defaults
EOF
cat > src/config.py <<'EOF'
DEFAULT_RATE = 10        # requests per second
DEFAULT_BURST = 20
EOF
cat > src/ratelimit.py <<'EOF'
import time

from config import DEFAULT_BURST, DEFAULT_RATE


class TokenBucket:
    def __init__(self, rate=DEFAULT_RATE, burst=DEFAULT_BURST, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = burst
        self.last = clock()

    def allow(self):
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
EOF
git add -A && commit "2024-02-05T09:00:00+00:00" "Initial token bucket"

cat > src/legacy_throttle.py <<'EOF'
# Deprecated: kept for the v1 gateway only.
import time

_last = {}


def throttle(key, min_interval=0.1):
    now = time.time()
    ok = now - _last.get(key, 0) >= min_interval
    if ok:
        _last[key] = now
    return ok
EOF
cat > tests/test_ratelimit.py <<'EOF'
import sys
import unittest

sys.path.insert(0, "src")
from ratelimit import TokenBucket  # noqa: E402


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class TokenBucketTest(unittest.TestCase):
    def test_burst_then_refill(self):
        clock = FakeClock()
        b = TokenBucket(rate=1, burst=2, clock=clock)
        self.assertEqual([b.allow(), b.allow(), b.allow()], [True, True, False])
        clock.t = 1.0
        self.assertTrue(b.allow())
EOF
git add -A && commit "2024-02-06T14:30:00+00:00" "Add tests and legacy throttle shim"

cat >> README.md <<'EOF'

Run the tests with `python3 -m unittest discover -s tests`.
EOF
git add -A && commit "2024-02-08T11:15:00+00:00" "Document how to run tests"

# --- uncommitted work in progress ---------------------------------------
cat > src/sliding_window.py <<'EOF'
from collections import deque
import time


class SlidingWindow:
    """Allow at most `limit` events in any `window`-second period."""

    def __init__(self, limit, window, clock=time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self.events = deque()

    def allow(self):
        now = self.clock()
        while self.events and now - self.events[0] >= self.window:
            self.events.popleft()
        if len(self.events) < self.limit:
            self.events.append(now)
            return True
        return False
EOF
cat >> src/ratelimit.py <<'EOF'


def make_limiter(kind="bucket", **kwargs):
    """Factory used by the gateway: 'bucket' or 'window'."""
    if kind == "window":
        from sliding_window import SlidingWindow
        return SlidingWindow(**kwargs)
    return TokenBucket(**kwargs)
EOF
cat >> tests/test_ratelimit.py <<'EOF'


class SlidingWindowTest(unittest.TestCase):
    def test_window(self):
        from ratelimit import make_limiter
        clock = FakeClock()
        w = make_limiter("window", limit=2, window=10, clock=clock)
        self.assertEqual([w.allow(), w.allow(), w.allow()], [True, True, False])
        clock.t = 10.0
        self.assertTrue(w.allow())
EOF
sed -i 's/^DEFAULT_RATE = 10 .*/DEFAULT_RATE = 50        # requests per second (TEMP: load test, do not commit)/' src/config.py
cat >> README.md <<'EOF'

TODO(me): document the sliding window once the API settles.
EOF
rm src/legacy_throttle.py
mkdir -p notes
cat > notes/scratch.md <<'EOF'
- ask Priya whether the gateway still needs legacy_throttle
- load test numbers: 50 rps ok, 80 rps p99 > 200ms
EOF
