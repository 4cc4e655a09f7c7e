#!/usr/bin/env python3
"""Load for an OpenAI-compatible server (mnemo-server or llama.cpp's llama-server):
N concurrent clients on loopback for a bounded time, each sending streamed completions
made of a shared system prompt (about --system-tokens tokens) and a question of its own.
Reports generated tokens/s, time to first token p50/p99 (also split by whether most of
the prompt came from the cache), failed requests and the prompt tokens served from
the server's cache. Token counts come from each reply's usage (both servers send
`usage.prompt_tokens_details.cached_tokens` with `stream_options.include_usage`);
mnemo-server's /metrics adds its prefix-cache hit count. Standard library only.

    serve_bench.py --url http://127.0.0.1:8080 --clients 16 --seconds 60
    serve_bench.py --url ... --unique-system    # every request its own system prompt
    serve_bench.py --url ... --json             # also one JSON line with every figure
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


def one_request(url, prompt, max_tokens, headers, extra):
    """(time to first text, generated tokens, prompt tokens, cached prompt tokens)."""
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True},
                       "ignore_eos": True, **extra}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers=headers)
    t0 = time.perf_counter()
    ttft, events, usage = None, 0, None
    with OPENER.open(req, timeout=600) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if "error" in ev:
                raise RuntimeError(ev["error"])
            # mnemo-server sends usage in a chunk of its own, llama-server in the last one.
            if ev.get("usage"):
                usage = ev["usage"]
            choices = ev.get("choices") or []
            if choices and choices[0].get("text"):
                events += 1
                if ttft is None:
                    ttft = time.perf_counter() - t0
    if usage is None:  # a server without usage in streams: one event per token
        return ttft, events, 0, 0
    details = usage.get("prompt_tokens_details") or {}
    return (ttft, usage.get("completion_tokens", events), usage.get("prompt_tokens", 0),
            details.get("cached_tokens", 0))


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
    ap.add_argument("--json", action="store_true", help="end with one JSON line of figures")
    ap.add_argument("--ban-tokens", default="", metavar="FIRST-LAST",
                    help="send logit_bias banning these ids (llama-server refuses a reply "
                    "that is not valid UTF-8, which a random-weight model's byte tokens make)")
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
    extra = {}
    if args.ban_tokens:
        first, last = (int(x) for x in args.ban_tokens.split("-"))
        extra["logit_bias"] = {str(t): -100 for t in range(first, last + 1)}
    shared = words(n_words, random.Random(0))
    before = metrics(args.url)
    ttfts, ttfts_hit, ttfts_miss = [], [], []
    tokens, failures, requests, prompt_tokens, cached_tokens = [0], [0], [0], [0], [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + args.seconds

    def client(i):
        rng = random.Random(1000 + i)
        while time.perf_counter() < deadline:
            system = words(n_words, rng) if args.unique_system else shared
            prompt = system + "\nQuestion: " + words(args.question_tokens, rng) + "\nAnswer:"
            try:
                ttft, n, n_prompt, n_cached = one_request(args.url, prompt, args.max_tokens,
                                                          headers, extra)
                with lock:
                    requests[0] += 1
                    tokens[0] += n
                    prompt_tokens[0] += n_prompt
                    cached_tokens[0] += n_cached
                    if ttft is not None:
                        ttfts.append(ttft)
                        # A hit: most of the prompt came from the cache (a few
                        # common leading tokens do not count).
                        (ttfts_hit if 2 * n_cached >= n_prompt > 0 else ttfts_miss).append(ttft)
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

    def pct(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")
    print(f"clients {args.clients}, {elapsed:.1f} s, {requests[0]} requests, "
          f"{failures[0]} failed")
    print(f"generated tokens/s: {tokens[0] / elapsed:.1f}")
    print(f"time to first token: p50 {pct(ttfts, 0.50) * 1000:.0f} ms, "
          f"p99 {pct(ttfts, 0.99) * 1000:.0f} ms"
          + (f", mean {statistics.mean(ttfts) * 1000:.0f} ms" if ttfts else ""))
    print(f"  at least half the prompt cached: {len(ttfts_hit)} requests, "
          f"p50 {pct(ttfts_hit, 0.50) * 1000:.0f} ms; without: {len(ttfts_miss)} requests, "
          f"p50 {pct(ttfts_miss, 0.50) * 1000:.0f} ms")
    print(f"prompt tokens from the cache (usage): {cached_tokens[0]} of {prompt_tokens[0]} "
          f"({100 * cached_tokens[0] / prompt_tokens[0] if prompt_tokens[0] else 0:.0f}%)")
    if before and after:
        d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        prompt = d.get("mnemo_prompt_tokens_total", 0)
        cached = d.get("mnemo_prompt_tokens_cached_total", 0)
        hits = d.get("mnemo_prefix_cache_hits_total", 0)
        admitted = d.get("mnemo_requests_total", 0)
        print(f"prefix cache: {hits:.0f} of {admitted:.0f} requests hit, "
              f"{cached:.0f} of {prompt:.0f} prompt tokens reused "
              f"({100 * cached / prompt if prompt else 0:.0f}%)")
    if args.json:
        print(json.dumps({
            "clients": args.clients, "seconds": round(elapsed, 2), "requests": requests[0],
            "failed": failures[0], "tokens_per_s": round(tokens[0] / elapsed, 2),
            "ttft_p50": pct(ttfts, 0.50), "ttft_p99": pct(ttfts, 0.99),
            "ttft_hit_p50": pct(ttfts_hit, 0.50), "ttft_miss_p50": pct(ttfts_miss, 0.50),
            "n_hit": len(ttfts_hit), "n_miss": len(ttfts_miss),
            "prompt_tokens": prompt_tokens[0], "cached_tokens": cached_tokens[0]}))
    return 1 if failures[0] else 0


if __name__ == "__main__":
    raise SystemExit(main())
