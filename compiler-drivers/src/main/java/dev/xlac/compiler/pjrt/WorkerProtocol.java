package dev.xlac.compiler.pjrt;

import dev.xlac.compiler.CompileOutcome;
import dev.xlac.compiler.CompileRequest;
import dev.xlac.compiler.ProgramKeys;
import dev.xlac.core.FailureKind;
import dev.xlac.core.ProgramKey;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The frames between {@link IsolatedPjrtDriver} and {@link PjrtWorkerProcess}, over the worker's
 * stdin and stdout. Every frame is {@code int magic "XLAC", byte type, payload}; strings and byte
 * arrays are {@code int length} + bytes (UTF-8), all big-endian. The worker answers each request
 * with exactly one outcome frame; the parent ends the worker by closing its stdin.
 *
 * <pre>
 *   worker -> parent  HELLO_OK     identity (CompilerIdentity.encode()), plugin facts (PjrtPluginFacts)
 *   worker -> parent  HELLO_ERROR  exit code name, message
 *   parent -> worker  REQUEST      key, module name, module bytes, format, has options (byte), [options]
 *   worker -> parent  SUCCESS      artifact, log, elapsed ns, phase count, (name, ns)...
 *   worker -> parent  FAILURE      kind name, message, log, elapsed ns
 * </pre>
 */
final class WorkerProtocol {
  static final int MAGIC = 0x584C4143; // "XLAC"
  static final byte HELLO_OK = 1;
  static final byte HELLO_ERROR = 2;
  static final byte REQUEST = 3;
  static final byte SUCCESS = 4;
  static final byte FAILURE = 5;
  private static final int MAX_LENGTH = Integer.MAX_VALUE - 64;

  private WorkerProtocol() {}

  /** A frame as read: its type, and the stream positioned at its payload. */
  static byte readType(DataInputStream in) throws IOException {
    int magic;
    try {
      magic = in.readInt();
    } catch (EOFException e) {
      throw new EOFException("the worker closed its output");
    }
    if (magic != MAGIC) {
      throw new IOException(String.format("corrupt frame from the worker (magic %08x)", magic));
    }
    return in.readByte();
  }

  static void writeHeader(DataOutputStream out, byte type) throws IOException {
    out.writeInt(MAGIC);
    out.writeByte(type);
  }

  static void writeRequest(DataOutputStream out, CompileRequest request) throws IOException {
    writeHeader(out, REQUEST);
    writeString(out, request.fingerprint().value());
    writeString(out, request.moduleName());
    writeBytes(out, request.hloModule());
    writeString(out, request.format());
    out.writeByte(request.isRecorded() ? 1 : 0);
    if (request.isRecorded()) {
      writeBytes(out, request.compileOptions());
    }
    out.flush();
  }

  static CompileRequest readRequest(DataInputStream in) throws IOException {
    ProgramKey fingerprint = ProgramKeys.parse(readString(in));
    String name = readString(in);
    byte[] program = readBytes(in);
    String format = readString(in);
    byte[] options = in.readByte() != 0 ? readBytes(in) : null;
    return new CompileRequest(fingerprint, name, program, format, options);
  }

  static void writeFacts(DataOutputStream out, PjrtPluginFacts f) throws IOException {
    writeString(out, f.platformName());
    writeString(out, f.platformVersion());
    out.writeInt(f.apiMajor());
    out.writeInt(f.apiMinor());
    writeString(out, f.fileSha256());
    out.writeInt(f.deviceKinds().size());
    for (String k : f.deviceKinds()) {
      writeString(out, k);
    }
    out.writeInt(f.attributes().size());
    for (PjrtPluginFacts.Attribute a : f.attributes()) {
      writeString(out, a.name());
      out.writeInt(a.type());
      switch (a.value()) {
        case String v -> writeString(out, v);
        case Long v -> out.writeLong(v);
        case long[] v -> {
          out.writeInt(v.length);
          for (long l : v) {
            out.writeLong(l);
          }
        }
        case Float v -> out.writeFloat(v);
        case Boolean v -> out.writeBoolean(v);
        case null, default -> { } // a type xlac does not know: its number alone
      }
    }
  }

  static PjrtPluginFacts readFacts(DataInputStream in) throws IOException {
    String name = readString(in);
    String version = readString(in);
    int major = in.readInt();
    int minor = in.readInt();
    String sha = readString(in);
    int kinds = in.readInt();
    java.util.List<String> deviceKinds = new java.util.ArrayList<>();
    for (int i = 0; i < kinds; i++) {
      deviceKinds.add(readString(in));
    }
    int n = in.readInt();
    java.util.List<PjrtPluginFacts.Attribute> attributes = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      String attribute = readString(in);
      int type = in.readInt();
      Object value = switch (type) {
        case PjrtPluginFacts.Attribute.STRING -> readString(in);
        case PjrtPluginFacts.Attribute.INT64 -> in.readLong();
        case PjrtPluginFacts.Attribute.INT64_LIST -> {
          long[] v = new long[in.readInt()];
          for (int j = 0; j < v.length; j++) {
            v[j] = in.readLong();
          }
          yield v;
        }
        case PjrtPluginFacts.Attribute.FLOAT -> in.readFloat();
        case PjrtPluginFacts.Attribute.BOOL -> in.readBoolean();
        default -> null;
      };
      attributes.add(new PjrtPluginFacts.Attribute(attribute, type, value));
    }
    return new PjrtPluginFacts(name, version, major, minor, sha, deviceKinds, attributes);
  }

  static void writeOutcome(DataOutputStream out, CompileOutcome outcome) throws IOException {
    switch (outcome) {
      case CompileOutcome.Success s -> {
        writeHeader(out, SUCCESS);
        writeBytes(out, s.artifact());
        writeString(out, s.log());
        out.writeLong(s.elapsed().toNanos());
        out.writeInt(s.phases().size());
        for (Map.Entry<String, Duration> p : s.phases().entrySet()) {
          writeString(out, p.getKey());
          out.writeLong(p.getValue().toNanos());
        }
      }
      case CompileOutcome.Failure f -> {
        writeHeader(out, FAILURE);
        writeString(out, f.kind().name());
        writeString(out, f.message());
        writeString(out, f.log());
        out.writeLong(f.elapsed().toNanos());
      }
    }
    out.flush();
  }

  /** Reads the payload of a SUCCESS or FAILURE frame of the given type. */
  static CompileOutcome readOutcome(DataInputStream in, byte type) throws IOException {
    if (type == SUCCESS) {
      byte[] artifact = readBytes(in);
      String log = readString(in);
      Duration elapsed = Duration.ofNanos(in.readLong());
      int n = in.readInt();
      Map<String, Duration> phases = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        phases.put(readString(in), Duration.ofNanos(in.readLong()));
      }
      return new CompileOutcome.Success(artifact, log, elapsed, phases);
    }
    if (type == FAILURE) {
      FailureKind kind = FailureKind.valueOf(readString(in));
      String message = readString(in);
      String log = readString(in);
      return new CompileOutcome.Failure(kind, message, log, Duration.ofNanos(in.readLong()));
    }
    throw new IOException("unexpected frame type " + type + " from the worker");
  }

  static void writeString(DataOutputStream out, String s) throws IOException {
    writeBytes(out, s.getBytes(StandardCharsets.UTF_8));
  }

  static String readString(DataInputStream in) throws IOException {
    return new String(readBytes(in), StandardCharsets.UTF_8);
  }

  static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
    out.writeInt(b.length);
    out.write(b);
  }

  static byte[] readBytes(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > MAX_LENGTH) {
      throw new IOException("corrupt frame from the worker (length " + n + ")");
    }
    byte[] b = in.readNBytes(n);
    if (b.length != n) {
      throw new EOFException("truncated frame from the worker");
    }
    return b;
  }
}
