#!/usr/bin/env python3
"""Load for an OpenAI-compatible server (mnemo-server or llama.cpp's llama-server):
N concurrent clients on loopback for a bounded time, each sending streamed completions
made of a shared system prompt (about --system-tokens tokens) and a question of its own.
Reports generated tokens/s, time to first token p50/p99, failed requests and, for
mnemo-server, the prefix-cache hit rate from /metrics. Standard library only.

    serve_bench.py --url http://127.0.0.1:8080 --clients 16 --seconds 60
    serve_bench.py --url ... --unique-system    # every request its own system prompt
"""
import argparse
import json
import random
import statistics
import threading
import time
import urllib.error
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def words(n, rng):
    vocab = ["the", "cat", "sat", "on", "a", "mat", "and", "looked", "at", "stars", "while",
             "rain", "fell", "over", "quiet", "town", "river", "light", "old", "bridge"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def metrics(url):
    try:
        with OPENER.open(url + "/metrics", timeout=10) as r:
            out = {}
            for line in r.read().decode().splitlines():
                if line.startswith("mnemo_"):
                    name, value = line.split()
                    out[name] = float(value)
            return out
    except (urllib.error.URLError, ValueError):
        return {}


def one_request(url, prompt, max_tokens, headers):
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "ignore_eos": True}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers=headers)
    t0 = time.perf_counter()
    ttft, n = None, 0
    with OPENER.open(req, timeout=600) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if "error" in ev:
                raise RuntimeError(ev["error"])
            choices = ev.get("choices") or []
            if choices and choices[0].get("text"):
                n += 1  # one event per token piece
                if ttft is None:
                    ttft = time.perf_counter() - t0
    return ttft, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--system-tokens", type=int, default=1000, help="about")
    ap.add_argument("--question-tokens", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--unique-system", action="store_true",
                    help="every request gets its own system prompt (no shared prefix)")
    ap.add_argument("--api-key", default="")
    args = ap.parse_args()

    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    # Words per token differ between vocabularies: size the prompt with the server's
    # tokenizer when it has /tokenize (mnemo-server and llama-server both do).
    n_words = args.system_tokens
    try:
        sample = words(200, random.Random(7))
        req = urllib.request.Request(args.url + "/tokenize",
                                     data=json.dumps({"content": sample}).encode(),
                                     headers=headers)
        with OPENER.open(req, timeout=10) as r:
            n_words = max(1, int(args.system_tokens * 200 / len(json.loads(r.read())["tokens"])))
    except (urllib.error.URLError, KeyError, ValueError, ZeroDivisionError):
        pass
    shared = words(n_words, random.Random(0))
    before = metrics(args.url)
    ttfts, tokens, failures, requests = [], [0], [0], [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + args.seconds

    def client(i):
        rng = random.Random(1000 + i)
        while time.perf_counter() < deadline:
            system = words(n_words, rng) if args.unique_system else shared
            prompt = system + "\nQuestion: " + words(args.question_tokens, rng) + "\nAnswer:"
            try:
                ttft, n = one_request(args.url, prompt, args.max_tokens, headers)
                with lock:
                    requests[0] += 1
                    tokens[0] += n
                    if ttft is not None:
                        ttfts.append(ttft)
            except Exception as e:  # noqa: BLE001 - every failure counts
                with lock:
                    failures[0] += 1
                print(f"client {i}: {e}")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    after = metrics(args.url)

    ttfts.sort()
    def pct(p):
        return ttfts[min(len(ttfts) - 1, int(p * len(ttfts)))] if ttfts else float("nan")
    print(f"clients {args.clients}, {elapsed:.1f} s, {requests[0]} requests, "
          f"{failures[0]} failed")
    print(f"generated tokens/s: {tokens[0] / elapsed:.1f}")
    print(f"time to first token: p50 {pct(0.50) * 1000:.0f} ms, p99 {pct(0.99) * 1000:.0f} ms"
          + (f", mean {statistics.mean(ttfts) * 1000:.0f} ms" if ttfts else ""))
    if before and after:
        d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        prompt = d.get("mnemo_prompt_tokens_total", 0)
        cached = d.get("mnemo_prompt_tokens_cached_total", 0)
        hits = d.get("mnemo_prefix_cache_hits_total", 0)
        admitted = d.get("mnemo_requests_total", 0)
        print(f"prefix cache: {hits:.0f} of {admitted:.0f} requests hit, "
              f"{cached:.0f} of {prompt:.0f} prompt tokens reused "
              f"({100 * cached / prompt if prompt else 0:.0f}%)")
    return 1 if failures[0] else 0


if __name__ == "__main__":
    raise SystemExit(main())
