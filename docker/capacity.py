"""Measure a running contextstore: events/s through the API and summaries/s through the workers.

    python docker/capacity.py --url http://127.0.0.1:8000 --token TOKEN [--clients 8]
        [--seconds 10] [--batch 1] [--summaries 20] [--forwarded-https]

Bounded in time and in count: --seconds of appends by --clients concurrent agents (each on its
own thread, --batch events per request, at most --max-requests in all), then --summaries
threads pushed over a token budget at once and the time until the workers have collapsed them
all. Every thread it writes belongs to a session named capacity-<run>-<n> in the token's
workspace. Uses httpx only (no Django), so it runs from any machine that reaches the server.
"""

import argparse
import statistics
import threading
import time
import uuid

import httpx

BODY = " ".join(["the agent weighed the context of the request carefully"] * 6)


def messages(n: int, start: int = 0) -> list[dict]:
    return [{"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"turn {i}: {BODY}"} for i in range(start, start + n)]


def ensure_thread(client: httpx.Client, key: str) -> int:
    response = client.post("/api/v1/threads/ensure/", json={"session_key": key, "agent": "capacity"})
    response.raise_for_status()
    return response.json()["id"]


def measure_appends(client: httpx.Client, run: str, clients: int, seconds: float, batch: int,
                    max_requests: int) -> dict:
    threads = [ensure_thread(client, f"capacity-{run}-{i}") for i in range(clients)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    budget = threading.Semaphore(max_requests)
    deadline = time.monotonic() + seconds

    def agent(thread_id: int) -> None:
        seq = 0
        while time.monotonic() < deadline and budget.acquire(blocking=False):
            started = time.perf_counter()
            response = client.post(f"/api/v1/threads/{thread_id}/events/",
                                   json={"events": messages(batch, seq)})
            elapsed = time.perf_counter() - started
            seq += batch
            with lock:
                if response.status_code == 201:
                    latencies.append(elapsed)
                else:
                    errors.append(f"{response.status_code} {response.text[:200]}")

    started = time.monotonic()
    workers = [threading.Thread(target=agent, args=(t,)) for t in threads]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.monotonic() - started
    latencies.sort()
    return {
        "requests": len(latencies), "errors": len(errors), "first_error": errors[:1],
        "events_per_s": round(len(latencies) * batch / wall, 1),
        "requests_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p95_ms": round(latencies[int(len(latencies) * 0.95) - 1] * 1000, 1) if latencies else None,
        "seconds": round(wall, 1),
    }


def measure_summaries(client: httpx.Client, run: str, count: int, timeout: float) -> dict:
    budget = 1000
    threads = [ensure_thread(client, f"capacity-{run}-sum-{i}") for i in range(count)]
    for thread_id in threads:
        client.put(f"/api/v1/threads/{thread_id}/summarizer/",
                   json={"token_budget": {"max_tokens": budget, "preserve_recent": 2}},
                   ).raise_for_status()
    started = time.monotonic()
    for thread_id in threads:  # each push goes over budget at once: one job per thread
        client.post(f"/api/v1/threads/{thread_id}/events/",
                    json={"events": messages(40)}).raise_for_status()
    pushed = time.monotonic()
    pending = set(threads)
    while pending and time.monotonic() - started < timeout:
        for thread_id in list(pending):
            if client.get(f"/api/v1/threads/{thread_id}/").json()["active_tokens"] <= budget:
                pending.discard(thread_id)
        time.sleep(0.1)
    wall = time.monotonic() - started
    done = count - len(pending)
    return {"summaries": done, "unfinished": len(pending), "seconds": round(wall, 2),
            "push_seconds": round(pushed - started, 2),
            "summaries_per_s": round(done / wall, 2) if wall else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--max-requests", type=int, default=20_000)
    parser.add_argument("--summaries", type=int, default=20)
    parser.add_argument("--forwarded-https", action="store_true",
                        help="send X-Forwarded-Proto: https (talking to gunicorn behind no proxy)")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"}
    if args.forwarded_https:
        headers["X-Forwarded-Proto"] = "https"
    limits = httpx.Limits(max_connections=args.clients + 2)
    run = uuid.uuid4().hex[:8]
    with httpx.Client(base_url=args.url, headers=headers, timeout=30, limits=limits) as client:
        print("appends", measure_appends(client, run, args.clients, args.seconds, args.batch,
                                         args.max_requests), flush=True)
        if args.summaries:
            print("summaries", measure_summaries(client, run, args.summaries, timeout=120))


if __name__ == "__main__":
    main()
