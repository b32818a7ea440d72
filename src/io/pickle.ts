/**
 * A restricted unpickler: Python's pickle opcodes (protocols 2 to 5, what torch.save writes and a
 * little more) read into plain values, with no code ever run. Where Python's `pickle.load` imports
 * whatever a GLOBAL names and calls it, this reader accepts only the globals its caller lists, and a
 * REDUCE calls the caller's own TypeScript function for that global; any other global is refused
 * by name, before anything else happens.
 *
 * Values: None → null, bool → boolean, int → number (bigint past 2^53), float → number, str →
 * string, bytes → Uint8Array, tuple → PyTuple, list → PyList, dict → PyDict, a global → PyGlobal,
 * and whatever the caller's functions return. Reading is one pass over the bytes with no recursion
 * and at most MAX_OPCODES opcodes, so a hostile pickle can neither hang it, overflow the stack nor
 * exhaust memory; every error names the opcode and its byte offset.
 */

/** A Python tuple. */
export class PyTuple {
  constructor(readonly items: unknown[]) {}
}

/** A Python list. */
export class PyList {
  readonly items: unknown[] = [];
}

/** The keys a PyDict accepts: Python's hashable scalars. */
export type PyKey = string | number | bigint | boolean | null;

/** A Python dict (or OrderedDict): insertion-ordered, as both are. */
export class PyDict {
  readonly map = new Map<PyKey, unknown>();
  /** What BUILD set on it (an OrderedDict's `__dict__`, e.g. a state dict's `_metadata`). */
  state: unknown = undefined;
}

/** A global (`module.name`) the caller allowed. */
export class PyGlobal {
  constructor(
    readonly module: string,
    readonly name: string,
  ) {}
  get qualified(): string {
    return `${this.module}.${this.name}`;
  }
}

/** What a caller lets one global do: nothing (a value, like a storage type) or be called by REDUCE. */
export interface GlobalRule {
  /** REDUCE's call: the arguments tuple's items in, the value out. Absent: calling it is refused. */
  call?: (args: unknown[]) => unknown;
}

/** Options of {@link unpickle}. */
export interface UnpickleOptions {
  /** Prefix of every error (the file: 'pytorch_model.bin'). */
  label: string;
  /** Where the pickle is, named in errors about its opcodes ('archive/data.pkl'). */
  entry: string;
  /** The globals allowed, by qualified name ('collections.OrderedDict'); any other is refused. */
  globals: Record<string, GlobalRule>;
  /** BINPERSID's lookup (torch's storages); absent: persistent ids are refused. */
  persistentLoad?: (pid: unknown) => unknown;
  /** At most this many opcodes are read (default MAX_OPCODES). */
  maxOpcodes?: number;
  /** What the refusal of a global says in its parentheses (default: 'allowed: ' and the list). */
  allowedText?: string;
}

/** Every opcode of pickle protocols 0 to 5, by byte: named in errors, read or not. */
const OPCODE_NAMES = new Map<number, string>([
  [0x28, 'MARK'],
  [0x2e, 'STOP'],
  [0x30, 'POP'],
  [0x31, 'POP_MARK'],
  [0x32, 'DUP'],
  [0x46, 'FLOAT'],
  [0x49, 'INT'],
  [0x4a, 'BININT'],
  [0x4b, 'BININT1'],
  [0x4c, 'LONG'],
  [0x4d, 'BININT2'],
  [0x4e, 'NONE'],
  [0x50, 'PERSID'],
  [0x51, 'BINPERSID'],
  [0x52, 'REDUCE'],
  [0x53, 'STRING'],
  [0x54, 'BINSTRING'],
  [0x55, 'SHORT_BINSTRING'],
  [0x56, 'UNICODE'],
  [0x58, 'BINUNICODE'],
  [0x61, 'APPEND'],
  [0x62, 'BUILD'],
  [0x63, 'GLOBAL'],
  [0x64, 'DICT'],
  [0x7d, 'EMPTY_DICT'],
  [0x65, 'APPENDS'],
  [0x67, 'GET'],
  [0x68, 'BINGET'],
  [0x69, 'INST'],
  [0x6a, 'LONG_BINGET'],
  [0x6c, 'LIST'],
  [0x5d, 'EMPTY_LIST'],
  [0x6f, 'OBJ'],
  [0x70, 'PUT'],
  [0x71, 'BINPUT'],
  [0x72, 'LONG_BINPUT'],
  [0x73, 'SETITEM'],
  [0x74, 'TUPLE'],
  [0x29, 'EMPTY_TUPLE'],
  [0x75, 'SETITEMS'],
  [0x47, 'BINFLOAT'],
  [0x80, 'PROTO'],
  [0x81, 'NEWOBJ'],
  [0x82, 'EXT1'],
  [0x83, 'EXT2'],
  [0x84, 'EXT4'],
  [0x85, 'TUPLE1'],
  [0x86, 'TUPLE2'],
  [0x87, 'TUPLE3'],
  [0x88, 'NEWTRUE'],
  [0x89, 'NEWFALSE'],
  [0x8a, 'LONG1'],
  [0x8b, 'LONG4'],
  [0x42, 'BINBYTES'],
  [0x43, 'SHORT_BINBYTES'],
  [0x8c, 'SHORT_BINUNICODE'],
  [0x8d, 'BINUNICODE8'],
  [0x8e, 'BINBYTES8'],
  [0x8f, 'EMPTY_SET'],
  [0x90, 'ADDITEMS'],
  [0x91, 'FROZENSET'],
  [0x92, 'NEWOBJ_EX'],
  [0x93, 'STACK_GLOBAL'],
  [0x94, 'MEMOIZE'],
  [0x95, 'FRAME'],
  [0x96, 'BYTEARRAY8'],
  [0x97, 'NEXT_BUFFER'],
  [0x98, 'READONLY_BUFFER'],
]);

/** Integers wider than this many bytes (LONG1/LONG4) are refused: no state dict holds one. */
const MAX_LONG_BYTES = 16;

/**
 * Pickles of more opcodes are refused: each opcode may make an object of about 100 bytes, so a
 * hostile pickle of a few hundred MB could exhaust memory. torch.save spends about 40 opcodes on one
 * tensor; this allows over 100,000 tensors.
 */
export const MAX_OPCODES = 5_000_000;

/** A short description of a value for errors: its Python type, and a scalar's value. */
export function describePy(v: unknown): string {
  if (v === null) return 'None';
  if (v === undefined) return 'nothing';
  if (typeof v === 'boolean') return `bool ${v ? 'True' : 'False'}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `int ${v}` : `float ${v}`;
  if (typeof v === 'bigint') return `int ${v}`;
  if (typeof v === 'string') return `str ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  if (v instanceof Uint8Array) return `bytes (${v.length})`;
  if (v instanceof PyTuple) return `tuple of ${v.items.length}`;
  if (v instanceof PyList) return `list of ${v.items.length}`;
  if (v instanceof PyDict) return `dict of ${v.map.size}`;
  if (v instanceof PyGlobal) return `global '${v.qualified}'`;
  return 'object';
}

/**
 * The value a pickle holds, reading only the opcodes of protocols 2 to 5 that plain data needs
 * (no INST/OBJ/NEWOBJ, no protocol-0 text opcodes), and only `options.globals`.
 */
export function unpickle(bytes: Uint8Array, options: UnpickleOptions): unknown {
  const { label, entry, globals } = options;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.length;
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const stack: unknown[] = [];
  const marks: number[] = [];
  const memo = new Map<number, unknown>();
  let pos = 0;
  let op = 0;
  let opAt = 0;

  const fail = (message: string): never => {
    const name = OPCODE_NAMES.get(op) ?? `opcode 0x${op.toString(16).padStart(2, '0')}`;
    throw new Error(`${label}: ${entry}: ${name} at byte ${opAt}: ${message}`);
  };
  const need = (k: number): number => {
    if (pos + k > n) fail(`needs ${k} more bytes, the pickle ends at byte ${n}`);
    const at = pos;
    pos += k;
    return at;
  };
  const pop = (): unknown => {
    if (stack.length === 0 || stack.length === marks[marks.length - 1]) fail('the stack is empty');
    return stack.pop();
  };
  const top = (): unknown => {
    if (stack.length === 0 || stack.length === marks[marks.length - 1]) fail('the stack is empty');
    return stack[stack.length - 1];
  };
  const popMark = (): unknown[] => {
    const m = marks.pop();
    if (m === undefined) return fail('no MARK before it');
    return stack.splice(m);
  };
  const text = (k: number): string => {
    const at = need(k);
    try {
      return utf8.decode(bytes.subarray(at, at + k));
    } catch {
      return fail(`its ${k}-byte string is not UTF-8`);
    }
  };
  const length64 = (): number => {
    const at = need(8);
    const hi = dv.getUint32(at + 4, true);
    if (hi !== 0) fail(`length ${(BigInt(hi) << 32n) | BigInt(dv.getUint32(at, true))} is past the pickle's end`);
    return dv.getUint32(at, true);
  };
  const long = (k: number): number | bigint => {
    if (k > MAX_LONG_BYTES) fail(`a ${k}-byte integer is wider than the ${MAX_LONG_BYTES} bytes allowed`);
    const at = need(k);
    if (k === 0) return 0;
    let v = 0n;
    for (let i = k - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[at + i]);
    if (bytes[at + k - 1] & 0x80) v -= 1n << BigInt(8 * k); // two's complement
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  };
  const key = (k: unknown): PyKey => {
    if (k === null || ['string', 'number', 'bigint', 'boolean'].includes(typeof k)) return k as PyKey;
    return fail(`a dict key must be a str, int, float, bool or None, got ${describePy(k)}`);
  };
  /** Python's unpickler cannot reach below the last MARK either. */
  const fenced = (at: number): unknown => (at < (marks[marks.length - 1] ?? 0) ? undefined : stack[at]);
  const dictAt = (at: number): PyDict => {
    const d = fenced(at);
    if (!(d instanceof PyDict)) fail(`expected a dict to set items on, got ${describePy(d)}`);
    return d as PyDict;
  };
  const listAt = (at: number): PyList => {
    const l = fenced(at);
    if (!(l instanceof PyList)) fail(`expected a list to append to, got ${describePy(l)}`);
    return l as PyList;
  };
  const global = (module: string, name: string): PyGlobal => {
    const q = `${module}.${name}`;
    if (!Object.hasOwn(globals, q)) {
      const allowed = options.allowedText ?? `allowed: ${Object.keys(globals).join(', ')}`;
      const shown = q.length > 80 ? `${q.slice(0, 80)}...` : q;
      throw new Error(`${label}: refusing global '${shown}' (${allowed})`);
    }
    return new PyGlobal(module, name);
  };

  const maxOpcodes = options.maxOpcodes ?? MAX_OPCODES;
  for (let ops = 0; ; ops++) {
    if (ops === maxOpcodes) {
      opAt = pos;
      op = bytes[pos];
      fail(`more than ${maxOpcodes} opcodes, more than a state dict needs`);
    }
    if (pos >= n) {
      opAt = pos;
      op = 0x2e;
      fail('the pickle ends without a STOP');
    }
    opAt = pos;
    op = bytes[pos++];
    switch (op) {
      case 0x80: {
        const v = bytes[need(1)];
        if (v < 2 || v > 5) fail(`protocol ${v}: only protocols 2 to 5 are read`);
        break;
      }
      case 0x95: // FRAME: a length hint (protocol 4+) for buffered readers; the bytes follow inline.
        if (length64() > n - pos) fail('the frame runs past the pickle');
        break;
      case 0x2e: {
        // STOP
        if (marks.length !== 0 || stack.length !== 1) {
          fail(`expected one value on the stack and no MARK, got ${stack.length} values, ${marks.length} MARKs`);
        }
        if (pos !== n) fail(`${n - pos} bytes follow the STOP`);
        return stack[0];
      }
      case 0x28:
        marks.push(stack.length);
        break;
      case 0x30:
        pop();
        break;
      case 0x31:
        popMark();
        break;
      case 0x32:
        stack.push(top());
        break;
      case 0x4e:
        stack.push(null);
        break;
      case 0x88:
        stack.push(true);
        break;
      case 0x89:
        stack.push(false);
        break;
      case 0x4a:
        stack.push(dv.getInt32(need(4), true));
        break;
      case 0x4b:
        stack.push(bytes[need(1)]);
        break;
      case 0x4d:
        stack.push(dv.getUint16(need(2), true));
        break;
      case 0x8a:
        stack.push(long(bytes[need(1)]));
        break;
      case 0x8b: {
        const k = dv.getInt32(need(4), true);
        if (k < 0) fail(`negative length ${k}`);
        stack.push(long(k));
        break;
      }
      case 0x47:
        stack.push(dv.getFloat64(need(8), false)); // big-endian, unlike every other field
        break;
      case 0x58:
        stack.push(text(dv.getUint32(need(4), true)));
        break;
      case 0x8c:
        stack.push(text(bytes[need(1)]));
        break;
      case 0x8d:
        stack.push(text(length64()));
        break;
      case 0x42:
      case 0x43:
      case 0x8e: {
        const k = op === 0x42 ? dv.getUint32(need(4), true) : op === 0x43 ? bytes[need(1)] : length64();
        const at = need(k);
        stack.push(bytes.slice(at, at + k));
        break;
      }
      case 0x29:
        stack.push(new PyTuple([]));
        break;
      case 0x85:
      case 0x86:
      case 0x87: {
        const k = op - 0x84;
        const items: unknown[] = [];
        for (let i = 0; i < k; i++) items.unshift(pop());
        stack.push(new PyTuple(items));
        break;
      }
      case 0x74:
        stack.push(new PyTuple(popMark()));
        break;
      case 0x5d:
        stack.push(new PyList());
        break;
      case 0x6c: {
        const l = new PyList();
        l.items.push(...popMark());
        stack.push(l);
        break;
      }
      case 0x61: {
        const v = pop();
        listAt(stack.length - 1).items.push(v);
        break;
      }
      case 0x65: {
        const items = popMark();
        const l = listAt(stack.length - 1);
        for (const v of items) l.items.push(v);
        break;
      }
      case 0x7d:
        stack.push(new PyDict());
        break;
      case 0x64:
      case 0x75: {
        const items = popMark();
        if (items.length % 2 !== 0) fail(`an odd number of keys and values (${items.length})`);
        let d: PyDict;
        if (op === 0x64) stack.push((d = new PyDict()));
        else d = dictAt(stack.length - 1);
        for (let i = 0; i < items.length; i += 2) d.map.set(key(items[i]), items[i + 1]);
        break;
      }
      case 0x73: {
        const v = pop();
        const k = key(pop());
        dictAt(stack.length - 1).map.set(k, v);
        break;
      }
      case 0x63: {
        // GLOBAL: "module\nname\n"
        const line = (): string => {
          const k = bytes.subarray(pos, pos + 257).indexOf(0x0a);
          if (k < 0) fail('expected a newline-terminated name of at most 256 bytes');
          return text(k + 1).slice(0, -1);
        };
        const module = line();
        stack.push(global(module, line()));
        break;
      }
      case 0x93: {
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string') {
          fail(`expected two str (module, name), got ${describePy(module)} and ${describePy(name)}`);
        }
        stack.push(global(module as string, name as string));
        break;
      }
      case 0x52: {
        const args = pop();
        const fn = pop();
        if (!(fn instanceof PyGlobal)) return fail(`expected a global to call, got ${describePy(fn)}`);
        const call = globals[fn.qualified].call;
        if (call === undefined) fail(`'${fn.qualified}' is allowed as a value, not as a call`);
        if (!(args instanceof PyTuple)) return fail(`expected a tuple of arguments, got ${describePy(args)}`);
        stack.push(call!(args.items));
        break;
      }
      case 0x62: {
        // BUILD: only a dict's state (an OrderedDict's __dict__) is taken; nothing is called.
        const state = pop();
        const obj = top();
        if (!(obj instanceof PyDict) || !(state instanceof PyDict)) {
          fail(`only a dict's state (a dict) is built, got ${describePy(state)} for ${describePy(obj)}`);
        }
        (obj as PyDict).state = state;
        break;
      }
      case 0x51: {
        const pid = pop();
        if (options.persistentLoad === undefined) fail('persistent ids are not allowed here');
        stack.push(options.persistentLoad!(pid));
        break;
      }
      case 0x71:
        memo.set(bytes[need(1)], top());
        break;
      case 0x72:
        memo.set(dv.getUint32(need(4), true), top());
        break;
      case 0x94:
        memo.set(memo.size, top());
        break;
      case 0x68:
      case 0x6a: {
        const i = op === 0x68 ? bytes[need(1)] : dv.getUint32(need(4), true);
        if (!memo.has(i)) fail(`memo ${i} was never stored`);
        stack.push(memo.get(i));
        break;
      }
      default: {
        const name = OPCODE_NAMES.get(op);
        if (name !== undefined) fail('this opcode is not read (a state dict does not need it)');
        fail('not a pickle opcode');
      }
    }
  }
}
