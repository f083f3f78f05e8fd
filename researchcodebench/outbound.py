"""Which hosts the portal may connect to on a user's behalf (the git intake, the LLM endpoint check).

The rule is an allow-list of what is *public*: a host is resolved once, every address it resolves to must
be a globally reachable unicast address, and the caller then connects to exactly the address checked (no
second lookup a DNS server could answer differently). Everything else is refused: loopback, private,
shared (CGN), link-local, multicast, reserved, documentation and benchmarking ranges, the IETF protocol
block ``192.0.0.0/24``, and every IPv6 form that embeds or tunnels an IPv4 address (IPv4-mapped and
-compatible, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``, 6to4 ``2002::/16``, Teredo ``2001::/32``),
whichever address they embed. Refusals and unreachable hosts answer with one message (``UNREACHABLE``), so
that the answer never tells which local ports are open.

Plain Python (``ipaddress``, ``socket``): no Django.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Ranges refused whatever ``ipaddress`` thinks of them (IANA special-purpose registries, RFC 6890 and on).
REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24",
        "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
        "224.0.0.0/4", "240.0.0.0/4",
        "::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
        "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
        "fec0::/10", "ff00::/8",
    )
)  # fmt: skip
#: The one answer for a host that is refused or cannot be reached.
UNREACHABLE = "the host cannot be reached, or is not a public address the portal may connect to"


class OutboundRefused(ValueError):
    """A host the portal may not connect to, or cannot reach (the message is ``UNREACHABLE``)."""

    def __init__(self, host: str) -> None:
        self.host = host
        super().__init__(f"{host}: {UNREACHABLE}")


def address_refused(address: IPAddress) -> bool:
    """True when ``address`` is not a public unicast address (module docstring)."""
    if any(address.version == net.version and address in net for net in REFUSED_NETWORKS):
        return True
    return not address.is_global or address.is_multicast or address.is_unspecified


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def static_refused(host: str) -> bool:
    """What ``resolve_public`` refuses without a lookup: a literal address ``address_refused`` refuses,
    ``localhost`` and its subdomains, numeric spellings that are not a plain address, any character but
    letters, digits, ``-``, ``.`` and ``_`` (a percent sign or a backslash included)."""
    name = (host or "").strip()
    literal = _literal(name)
    if literal is not None:
        return address_refused(literal)
    bare = name.rstrip(".").lower()
    if not bare or any(not (c.isascii() and (c.isalnum() or c in "-._")) for c in bare):
        return True
    if bare == "localhost" or bare.endswith(".localhost"):
        return True
    # inet_aton spellings (2130706433, 0x7f.1, 0177.0.0.1) name addresses without looking like one.
    return all(part.isdigit() or part.startswith("0x") for part in bare.split("."))


@dataclass(frozen=True)
class Destination:
    """A checked host: the name asked for, the port and the one address to connect to."""

    host: str
    port: int
    address: IPAddress

    def curl_resolve(self) -> str:
        """The ``host:port:address`` entry of curl's resolve list (git's ``http.curloptResolve``)."""
        shown = f"[{self.address}]" if self.address.version == 6 else str(self.address)
        return f"{self.host}:{self.port}:{shown}"


def resolve_public(host: str, port: int) -> Destination:
    """Resolve ``host`` once and return the address to connect to, or raise ``OutboundRefused``.

    Refused before any lookup: names with a percent sign, a backslash or anything but letters, digits,
    ``-``, ``.`` and ``_``; ``localhost`` and ``*.localhost`` (trailing dot or not); numeric spellings other
    than a dotted quad or an IPv6 literal. After the lookup, every address must pass ``address_refused``
    (one private answer among public ones refuses the host: a rebinding server cannot slip one in)."""
    name = (host or "").strip()
    bare = name.strip("[]").rstrip(".").lower()
    literal = _literal(name)
    if static_refused(name):
        raise OutboundRefused(name)
    if literal is None:
        try:
            infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise OutboundRefused(name) from None
        addresses = []
        for info in infos:
            found = _literal(str(info[4][0]).split("%", 1)[0])
            if found is None:
                raise OutboundRefused(name)
            addresses.append(found)
    else:
        addresses = [literal]
    if not addresses or any(address_refused(a) for a in addresses):
        raise OutboundRefused(name)
    return Destination(host=bare if literal is None else str(literal), port=port, address=addresses[0])
