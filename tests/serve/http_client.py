#!/usr/bin/env python3
"""mnemo-server through Python's standard library only (urllib): what a plain client
sees. Starts the server on a free loopback port, then checks a whole answer, a stream,
concurrent clients, cancellation by closing a stream, and error answers.

    http_client.py SERVER_BINARY MODEL.gguf
"""
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# Loopback only: never send these requests through a configured proxy.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def start(binary, model):
    proc = subprocess.Popen(
        [binary, "--model", model, "--port", "0", "--slots", "2", "--ctx", "2048",
         "--threads", "1"],
        stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "127.0.0.1:" not in line:
        proc.kill()
        sys.exit(f"server did not start: {line!r}")
    port = int(line.split("127.0.0.1:")[1].split()[0])
    return proc, f"http://127.0.0.1:{port}"


def post(url, body, timeout=60):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with OPENER.open(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def metric(base, name):
    with OPENER.open(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(f"mnemo_{name} "):
                return int(line.split()[1])
    raise KeyError(name)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    proc, base = start(binary, model)
    try:
        # A whole answer.
        status, body = post(base + "/v1/completions",
                            {"prompt": "the cat", "max_tokens": 6, "temperature": 0,
                             "ignore_eos": True})
        check(status == 200, f"completion: {status} {body}")
        check(body["usage"]["completion_tokens"] == 6, f"usage: {body['usage']}")
        whole = body["choices"][0]["text"]

        # The same request streamed gives the same text.
        req = urllib.request.Request(
            base + "/v1/completions",
            data=json.dumps({"prompt": "the cat", "max_tokens": 6, "temperature": 0,
                             "ignore_eos": True, "stream": True}).encode(),
            headers={"Content-Type": "application/json"})
        text, done = "", False
        with OPENER.open(req, timeout=60) as r:
            check(r.headers["Content-Type"].startswith("text/event-stream"), "content type")
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                ev = json.loads(line[6:])
                text += ev["choices"][0]["text"]
        check(done and text == whole, f"stream {text!r} != whole {whole!r}")

        # Concurrent clients.
        results = []
        def one(i):
            results.append(post(base + "/v1/chat/completions",
                                {"messages": [{"role": "user", "content": f"hello {i}"}],
                                 "max_tokens": 4, "seed": i, "ignore_eos": True}))
        threads = [threading.Thread(target=one, args=(i,)) for i in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(len(results) == 5 and all(s == 200 for s, _ in results),
              f"concurrent: {[s for s, _ in results]}")

        # Cancellation: read one event of a long stream, then hang up.
        before = metric(base, "requests_cancelled_total")
        req = urllib.request.Request(
            base + "/v1/completions",
            data=json.dumps({"prompt": "long", "max_tokens": 2000, "ignore_eos": True,
                             "stream": True}).encode(),
            headers={"Content-Type": "application/json"})
        r = OPENER.open(req, timeout=60)
        r.readline()
        r.close()
        for _ in range(500):
            if metric(base, "requests_cancelled_total") == before + 1 and \
                    metric(base, "slots_busy") == 0:
                break
            time.sleep(0.01)
        check(metric(base, "requests_cancelled_total") == before + 1, "cancel not seen")
        check(metric(base, "slots_busy") == 0, "slot not freed")

        # Errors.
        for body, code in [(b"{oops", 400), (b'{"prompt": "\xff"}', 400),
                           ({"prompt": "a", "max_tokens": -1}, 400),
                           ({"prompt": "a", "top_k": "x"}, 400),
                           ({"prompt": [5] * 3000}, 400)]:
            status, answer = post(base + "/v1/completions", body)
            check(status == code and "error" in answer, f"{body!r:.40}: {status} {answer}")
        status, body = post(base + "/v1/completions", {"prompt": "ok", "max_tokens": 2})
        check(status == 200, "serving after errors")
        print("python client: all checks passed")
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
