"""How many messages wait in each broker queue (the status page's queue depth).

One passive ``queue_declare`` per queue answers for every transport the portal supports: RabbitMQ returns
the queue's ``message_count`` (ready messages: those a worker has taken but not acknowledged are not
waiting), and kombu's virtual transports compute it themselves (redis: ``LLEN`` over the queue's priority
lists; filesystem: the queue's message files in its folder). What differs per transport is how to bound the
time a dead broker may cost, so the options below set a timeout for each. A queue nobody declared yet holds
nothing (the broker answers NOT_FOUND); a broker that cannot be reached gives an unknown depth, never an
exception, so that a status page stays up while the broker is down.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from kombu import Connection

#: how long one status read may wait for the broker, connecting and per answer
DEFAULT_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class QueueDepth:
    """Messages waiting in ``queue``; ``depth`` is None when the broker could not be asked (``error`` says
    why)."""

    queue: str
    depth: int | None
    error: str = ""


def _transport_options(url: str, base: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    options = dict(base)
    scheme = url.split("://", 1)[0]
    if scheme.startswith(("amqp", "pyamqp")):
        # py-amqp's connection takes these (kombu passes transport options through): a broker that accepts
        # the connection and then stalls must not hang the page.
        options.setdefault("read_timeout", timeout_s)
        options.setdefault("write_timeout", timeout_s)
    elif scheme.startswith(("redis", "rediss")):
        options.setdefault("socket_timeout", timeout_s)
        options.setdefault("socket_connect_timeout", timeout_s)
    # filesystem:// reads a local folder: nothing to bound.
    return options


def _not_found(exc: Exception) -> bool:
    # py-amqp raises NotFound (reply_code 404); kombu's virtual transports a ChannelError with code "404".
    return str(getattr(exc, "reply_code", "")) == "404"


def queue_depths(
    *,
    queues: Iterable[str],
    url: str | None = None,
    transport_options: dict[str, Any] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[QueueDepth]:
    """The number of messages waiting in each of ``queues``, in their order, on the broker at ``url``
    (default ``CELERY_BROKER_URL`` with ``CELERY_BROKER_TRANSPORT_OPTIONS``).

    Never raises for a broker problem: when the broker cannot be reached within about ``timeout_s``, every
    depth is None with the error; a queue the broker does not know has depth 0.
    """
    names = list(queues)
    if url is None:
        url = settings.CELERY_BROKER_URL
        if transport_options is None:
            transport_options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    options = _transport_options(url, transport_options or {}, timeout_s)
    depths: list[QueueDepth] = []
    try:
        with Connection(url, transport_options=options, connect_timeout=timeout_s) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout_s)
            for name in names:
                # A fresh channel per queue: AMQP closes the channel on which a passive declare failed.
                channel = conn.channel()
                try:
                    depths.append(QueueDepth(name, channel.queue_declare(queue=name, passive=True)[1]))
                except conn.channel_errors as exc:
                    if not _not_found(exc):
                        raise
                    depths.append(QueueDepth(name, 0))
                finally:
                    try:
                        channel.close()
                    except conn.connection_errors + conn.channel_errors:
                        pass  # already closed by the broker's NOT_FOUND
    except Exception as exc:
        # Anything the transport raises (refused, DNS, auth, timeout, a bad URL) means "unknown".
        error = f"{type(exc).__name__}: {exc}"
        return [QueueDepth(name, None, error) for name in names]
    return depths
