/**
 * Many HTTP exchanges over one WebSocket: the auth proxy's tunnel between the server and a cluster's agent, which
 * dialled out (so no cluster needs inbound access, as with Plural's agent tunnel). The server opens a stream per
 * proxied request; the agent answers it with the Kubernetes API server's response, streamed (watches and logs run
 * for as long as the user keeps them open).
 *
 * Not HTTP/2 over the socket (Node's http2 on a Duplex): destroying an HTTP/2 client stream can spin Node 24's
 * event loop (see kube/transport.ts), and a cancelled watch is this tunnel's everyday case.
 *
 * Frames are binary WebSocket messages: a type byte, the stream id (uint32, big-endian), then the payload. Each
 * side may have at most STREAM_WINDOW bytes of one stream's data unacknowledged; the receiver acknowledges
 * (CREDIT) as its consumer reads, so a slow reader holds back its own stream only, and memory stays bounded.
 */
import { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

const FRAME = { open: 1, head: 2, data: 3, end: 4, reset: 5, credit: 6 } as const;
type FrameType = (typeof FRAME)[keyof typeof FRAME];

/** Bytes of one stream's data a sender may have in flight before the receiver acknowledges them. */
export const STREAM_WINDOW = 256 * 1024;
/** The largest DATA frame, so one stream's burst does not hold up the others' frames for long. */
const MAX_FRAME_DATA = 32 * 1024;

/** What the server asks the agent to send to its Kubernetes API server. */
export interface TunnelRequest {
  method: string;
  /** Path and query below the API server's root, e.g. `/api/v1/pods?watch=true`. */
  path: string;
  headers: Record<string, string | string[]>;
  /** The identity to impersonate, and its groups (see rights.ts clusterGroups). */
  user: string;
  groups: string[];
}

export interface TunnelResponseHead {
  status: number;
  headers: Record<string, string | string[]>;
}

/** One exchange: the request body one way and the response body the other, as a Duplex. */
export class TunnelStream extends Duplex {
  readonly id: number;
  /** The response's status and headers; rejects when the stream fails before they arrive. */
  readonly head: Promise<TunnelResponseHead>;
  readonly #mux: TunnelMux;
  #credit = STREAM_WINDOW;
  #unacknowledged = 0;
  #pending: { chunk: Buffer; callback: (error?: Error | null) => void } | undefined;
  #resolveHead!: (head: TunnelResponseHead) => void;
  #rejectHead!: (error: Error) => void;
  #resetByPeer = false;
  #ended = { sent: false, received: false };

  constructor(mux: TunnelMux, id: number) {
    super({ readableHighWaterMark: 64 * 1024, writableHighWaterMark: 64 * 1024 });
    this.#mux = mux;
    this.id = id;
    this.head = new Promise((resolve, reject) => {
      this.#resolveHead = resolve;
      this.#rejectHead = reject;
    });
    // The caller may never await the head (the agent's side); its rejection is not an unhandled one. Likewise a
    // stream's failure reaches its users through `head` and their pipelines, never as an uncaught 'error'.
    this.head.catch(() => undefined);
    this.on('error', () => undefined);
  }

  /** The agent's answer: status and headers, sent before the body. */
  respond(head: TunnelResponseHead): void {
    this.#mux.send(FRAME.head, this.id, Buffer.from(JSON.stringify(head)));
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#pending = { chunk, callback };
    this.#flush();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#ended.sent = true;
    this.#mux.send(FRAME.end, this.id);
    this.#forgetWhenDone();
    callback();
  }

  override _read(): void {
    if (this.#unacknowledged === 0) return;
    const credit = Buffer.alloc(4);
    credit.writeUInt32BE(this.#unacknowledged);
    this.#unacknowledged = 0;
    this.#mux.send(FRAME.credit, this.id, credit);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#resetByPeer && !(this.#ended.sent && this.#ended.received))
      this.#mux.send(FRAME.reset, this.id, Buffer.from(error?.message ?? 'cancelled'));
    this.#rejectHead(error ?? new Error('tunnel stream closed before its response'));
    this.#mux.forget(this.id);
    callback(error);
  }

  /** @internal A frame for this stream arrived. */
  receive(type: FrameType, payload: Buffer): void {
    if (type === FRAME.data) {
      this.#unacknowledged += payload.length;
      this.push(payload);
    } else if (type === FRAME.end) {
      this.#ended.received = true;
      this.push(null);
      this.#forgetWhenDone();
    } else if (type === FRAME.head) {
      this.#resolveHead(JSON.parse(payload.toString()) as TunnelResponseHead);
    } else if (type === FRAME.credit) {
      this.#credit += payload.readUInt32BE(0);
      this.#flush();
    } else if (type === FRAME.reset) {
      this.#resetByPeer = true;
      this.destroy(new Error(`tunnel stream reset by the peer: ${payload.toString()}`));
    }
  }

  #flush(): void {
    while (this.#pending && this.#credit > 0) {
      const { chunk, callback } = this.#pending;
      const size = Math.min(chunk.length, this.#credit, MAX_FRAME_DATA);
      this.#mux.send(FRAME.data, this.id, chunk.subarray(0, size));
      this.#credit -= size;
      if (size === chunk.length) {
        this.#pending = undefined;
        callback();
      } else {
        this.#pending = { chunk: chunk.subarray(size), callback };
      }
    }
  }

  #forgetWhenDone(): void {
    if (this.#ended.sent && this.#ended.received) this.#mux.forget(this.id);
  }
}

/** One side of the tunnel over `socket`. */
export class TunnelMux {
  readonly #socket: WebSocket;
  readonly #streams = new Map<number, TunnelStream>();
  #nextId = 1;

  /** @param onOpen the agent's side: called with each stream the server opens and what it asks for. */
  constructor(socket: WebSocket, onOpen?: (stream: TunnelStream, request: TunnelRequest) => void) {
    this.#socket = socket;
    socket.binaryType = 'nodebuffer';
    // Text messages on the same socket are the push channel's kicks (push-channels.ts), not tunnel frames.
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary || data.length < 5) return;
      const type = data.readUInt8(0) as FrameType;
      const id = data.readUInt32BE(1);
      const payload = data.subarray(5);
      if (type === FRAME.open && onOpen) {
        const stream = new TunnelStream(this, id);
        this.#streams.set(id, stream);
        onOpen(stream, JSON.parse(payload.toString()) as TunnelRequest);
        return;
      }
      this.#streams.get(id)?.receive(type, payload);
    });
    socket.on('close', () => {
      for (const stream of this.#streams.values()) stream.destroy(new Error('the agent tunnel closed'));
    });
  }

  /** The server's side: starts an exchange; write the request body (or just end it), await `head`, read the body. */
  open(request: TunnelRequest): TunnelStream {
    const id = this.#nextId++;
    const stream = new TunnelStream(this, id);
    this.#streams.set(id, stream);
    this.send(FRAME.open, id, Buffer.from(JSON.stringify(request)));
    return stream;
  }

  /** Streams under way. */
  get size(): number {
    return this.#streams.size;
  }

  close(code: number, reason: string): void {
    this.#socket.close(code, reason);
  }

  /** @internal */
  send(type: FrameType, id: number, payload: Buffer = Buffer.alloc(0)): void {
    if (this.#socket.readyState !== this.#socket.OPEN) return;
    const header = Buffer.alloc(5);
    header.writeUInt8(type, 0);
    header.writeUInt32BE(id, 1);
    this.#socket.send(Buffer.concat([header, payload]));
  }

  /** @internal */
  forget(id: number): void {
    this.#streams.delete(id);
  }
}
