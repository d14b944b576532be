"""A plain peer server for the load harness's comparison mode, on Python's `websockets`:
/echo echoes each message; /broadcast relays each message to every /broadcast connection
(sender included). Usage: peer-python.py PORT"""
import asyncio
import sys

from websockets.asyncio.server import broadcast, serve

clients = set()


async def handler(ws):
    path = ws.request.path
    if path == "/echo":
        async for message in ws:
            await ws.send(message)
    elif path == "/broadcast":
        clients.add(ws)
        try:
            async for message in ws:
                broadcast(clients, message)
        finally:
            clients.discard(ws)
    else:
        await ws.close(1008, "unknown path")


async def main(port):
    async with serve(handler, "127.0.0.1", port, compression=None, max_size=1 << 20):
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
