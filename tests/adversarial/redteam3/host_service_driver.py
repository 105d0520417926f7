"""Driver (not a candidate) for ``reaches_host_services.py``: a one-page HTTP listener on 127.0.0.1
(standing for any service of the host), the candidate evaluated with its address in a pool of the CPU
default (runners with users of their own); prints the paths the listener was asked for.
Run from the repository root: PYTHONPATH=$PWD python tests/adversarial/redteam3/host_service_driver.py"""

import http.server
import sys
import threading
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))

from helpers import DEVICE, small_problem  # noqa: E402
from tritongym.env import LocalEnv, PoolConfig  # noqa: E402
from tritongym.evaluate import EvalConfig  # noqa: E402

ASKED: list[str] = []


class Listener(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        ASKED.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"the host's service")

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    source = (HERE / "reaches_host_services.py").read_text().replace('("127.0.0.1", 1)', f'("127.0.0.1", {port})', 1)
    config = EvalConfig(device=DEVICE, trials=2, timing_budget_s=1.0)
    try:
        with LocalEnv(PoolConfig(devices=DEVICE, sandboxes_per_device=1)) as env:
            result = env.submit(small_problem("vector_add"), source, config).result()
    finally:
        server.shutdown()
    print("attacker:", result.verdict, "|", result.stdout.strip()[-200:])
    print("listener was asked for:", ASKED)


if __name__ == "__main__":
    main()
