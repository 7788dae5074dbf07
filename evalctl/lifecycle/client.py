"""A thin gRPC client for one daemon socket: channel options, deadlines, health.

Every call takes a timeout (gRPC has no default deadline). The channel reconnects with a
short backoff, so a respawned daemon is reachable in well under a second instead of the
default ~1 s first retry. gRPC's own retries stay off: a request that crashed the daemon
must not be replayed behind the caller's back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalctl.server.options import SERVICE_NAME

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.enable_retries", 0),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)


class DaemonClient:
    def __init__(self, socket: Path):
        import grpc
        from grpc_health.v1 import health_pb2_grpc

        from evalctl.server.gen import inference_pb2_grpc as pb_grpc

        self.socket = socket
        self._channel = grpc.insecure_channel(f"unix:{socket}", options=CHANNEL_OPTIONS)
        self._stub = pb_grpc.InferenceServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def health(self, *, timeout: float) -> str:
        """ "SERVING", "NOT_SERVING", ...; raises grpc.RpcError when unreachable."""
        from grpc_health.v1 import health_pb2

        reply = self._health.Check(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout
        )
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    def status(self, *, timeout: float) -> Any:
        from evalctl.server.gen import inference_pb2 as pb

        return self._stub.GetStatus(pb.GetStatusRequest(), timeout=timeout)

    def complete(self, request: Any, *, timeout: float) -> Any:
        return self._stub.Complete(request, timeout=timeout)

    def embed(self, request: Any, *, timeout: float) -> Any:
        """An `EmbedRequest` to its `EmbedResponse` (one vector per text)."""
        return self._stub.Embed(request, timeout=timeout)

    def shutdown(self, *, grace_s: float, timeout: float) -> bool:
        from evalctl.server.gen import inference_pb2 as pb

        reply = self._stub.Shutdown(pb.ShutdownRequest(grace_s=grace_s), timeout=timeout)
        return bool(reply.accepted)

    def close(self) -> None:
        self._channel.close()
