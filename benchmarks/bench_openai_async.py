"""The openai SDK's own cost per streamed request, in J threads (sync `OpenAI`, as evalctl
calls it) against J asyncio tasks (`AsyncOpenAI`), N requests against the fake
OpenAI-compatible server at a fixed latency (issue 41: "measure an asyncio path against the
thread pool, and keep the faster").

The server runs in a process of its own (`python -m evalctl.fakes.llm_server`), so the
client's CPU is this process's alone. Each request streams its reply and reads it to the end
of the body, as evalctl's provider does. What it prints is the floor under evalctl's CPU per
case at the same settings (benchmarks/bench_scale.py): what the SDK and httpx spend.

    python benchmarks/bench_openai_async.py [--requests 3000] [--latency-ms 200] [-j 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import resource
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _messages(i: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Classify this ticket: {i}"}]


def threads(url: str, requests: int, jobs: int) -> None:
    import openai

    client = openai.OpenAI(api_key="sk-fake", base_url=url, max_retries=0)
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(requests):
        todo.put(i)

    def work() -> None:
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            with client.chat.completions.with_streaming_response.create(
                model="m",
                messages=_messages(i),
                stream=True,  # type: ignore[arg-type]
            ) as raw:
                for _line in raw.iter_lines():
                    pass

    workers = [threading.Thread(target=work) for _ in range(jobs)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def tasks(url: str, requests: int, jobs: int) -> None:
    import openai

    async def main() -> None:
        client = openai.AsyncOpenAI(api_key="sk-fake", base_url=url, max_retries=0)
        slots = asyncio.Semaphore(jobs)

        async def one(i: int) -> None:
            async with (
                slots,
                client.chat.completions.with_streaming_response.create(
                    model="m",
                    messages=_messages(i),
                    stream=True,  # type: ignore[arg-type]
                ) as raw,
            ):
                async for _line in raw.iter_lines():
                    pass

        await asyncio.gather(*(one(i) for i in range(requests)))
        await client.close()

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("-j", "--jobs", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    import openai  # noqa: F401  (imported before any timing: the first run would pay for it)

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "evalctl.fakes.llm_server", "--port", str(port), "--quiet",
         "--latency-ms", str(args.latency_ms)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ),
    )  # fmt: skip
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "listening on ...": the server is up
        url = f"http://127.0.0.1:{port}/v1"
        ideal = args.requests * args.latency_ms / 1000 / args.jobs
        load = os.getloadavg()[0]
        print(
            f"{args.requests} streamed requests at {args.latency_ms:g} ms, {args.jobs} at once;"
            f" ideal {ideal:.2f} s; load average {load:.2f}",
            flush=True,
        )
        per_request: dict[str, list[float]] = {"threads": [], "asyncio": []}
        for _ in range(args.rounds):
            for name, run in (("threads", threads), ("asyncio", tasks)):
                wall, cpu = time.perf_counter(), _cpu()
                run(url, args.requests, args.jobs)
                wall, cpu = time.perf_counter() - wall, _cpu() - cpu
                per_request[name].append(cpu * 1000 / args.requests)
                print(f"{name:8s} wall {wall:6.2f} s ({wall / ideal:.2f} of ideal),"
                      f" cpu {cpu * 1000 / args.requests:.2f} ms/request", flush=True)  # fmt: skip
        best = {name: min(values) for name, values in per_request.items()}
        print(
            f"ratio cpu asyncio / threads {best['asyncio'] / best['threads']:.2f}"
            f" (threads {best['threads']:.2f} ms, asyncio {best['asyncio']:.2f} ms per request)"
        )
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
