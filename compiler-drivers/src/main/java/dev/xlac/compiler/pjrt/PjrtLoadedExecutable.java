package dev.xlac.compiler.pjrt;

import static dev.xlac.compiler.pjrt.PjrtStructs.EXECUTABLE_DESTROY;
import static dev.xlac.compiler.pjrt.PjrtStructs.EXECUTABLE_NAME;
import static dev.xlac.compiler.pjrt.PjrtStructs.EXECUTABLE_NUM_OUTPUTS;
import static dev.xlac.compiler.pjrt.PjrtStructs.EXECUTABLE_SERIALIZE;
import static dev.xlac.compiler.pjrt.PjrtStructs.LOADED_EXECUTABLE_DESTROY;
import static dev.xlac.compiler.pjrt.PjrtStructs.LOADED_EXECUTABLE_GET_EXECUTABLE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.xlac.core.ExitCode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A {@code PJRT_LoadedExecutable} owned by its {@link PjrtClient}. The queries go through a
 * short-lived {@code PJRT_Executable} (from {@code PJRT_LoadedExecutable_GetExecutable}) that is
 * destroyed before the call returns.
 */
public final class PjrtLoadedExecutable implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(PjrtLoadedExecutable.class.getName());

  private final PjrtClient client;
  private final PjrtApi api;
  private final MemorySegment handle;
  private final Lifecycle lifecycle;

  PjrtLoadedExecutable(PjrtClient client, PjrtApi api, MemorySegment handle) {
    this.client = client;
    this.api = api;
    this.handle = handle;
    this.lifecycle = new Lifecycle("PJRT executable");
  }

  /**
   * {@code PJRT_Executable_Serialize}: the bytes are copied to the heap, then the plugin's buffer is
   * released with the deleter it returned.
   */
  public byte[] serialize() {
    return withExecutable((call, executable) -> {
      MemorySegment args = EXECUTABLE_SERIALIZE.allocate(call);
      args.set(ADDRESS, EXECUTABLE_SERIALIZE.offset("executable"), executable);
      api.check(PjrtApi.Slot.EXECUTABLE_SERIALIZE, args, ExitCode.WORK_FAILED);
      MemorySegment backing = args.get(ADDRESS, EXECUTABLE_SERIALIZE.offset("serialized_executable"));
      MemorySegment deleter = args.get(ADDRESS, EXECUTABLE_SERIALIZE.offset("serialized_executable_deleter"));
      try {
        return PjrtApi.bytes(args.get(ADDRESS, EXECUTABLE_SERIALIZE.offset("serialized_bytes")),
            args.get(JAVA_LONG, EXECUTABLE_SERIALIZE.offset("serialized_bytes_size")));
      } finally {
        PjrtApi.callDeleter(deleter, backing);
      }
    });
  }

  /** {@code PJRT_Executable_Name}: for XLA, the HLO module's name. */
  public String name() {
    return withExecutable((call, executable) -> {
      MemorySegment args = EXECUTABLE_NAME.allocate(call);
      args.set(ADDRESS, EXECUTABLE_NAME.offset("executable"), executable);
      api.check(PjrtApi.Slot.EXECUTABLE_NAME, args, ExitCode.WORK_FAILED);
      return PjrtApi.string(args.get(ADDRESS, EXECUTABLE_NAME.offset("executable_name")),
          args.get(JAVA_LONG, EXECUTABLE_NAME.offset("executable_name_size")));
    });
  }

  /** {@code PJRT_Executable_NumOutputs}: outputs per device. */
  public long numOutputs() {
    return withExecutable((call, executable) -> {
      MemorySegment args = EXECUTABLE_NUM_OUTPUTS.allocate(call);
      args.set(ADDRESS, EXECUTABLE_NUM_OUTPUTS.offset("executable"), executable);
      api.check(PjrtApi.Slot.EXECUTABLE_NUM_OUTPUTS, args, ExitCode.WORK_FAILED);
      return args.get(JAVA_LONG, EXECUTABLE_NUM_OUTPUTS.offset("num_outputs"));
    });
  }

  private interface ExecutableCall<T> {
    T apply(Arena call, MemorySegment executable);
  }

  private <T> T withExecutable(ExecutableCall<T> body) {
    return lifecycle.use(() -> {
      try (Arena call = Arena.ofConfined()) {
        MemorySegment get = LOADED_EXECUTABLE_GET_EXECUTABLE.allocate(call);
        get.set(ADDRESS, LOADED_EXECUTABLE_GET_EXECUTABLE.offset("loaded_executable"), handle);
        api.check(PjrtApi.Slot.LOADED_EXECUTABLE_GET_EXECUTABLE, get, ExitCode.WORK_FAILED);
        MemorySegment executable = get.get(ADDRESS, LOADED_EXECUTABLE_GET_EXECUTABLE.offset("executable"));
        try {
          return body.apply(call, executable);
        } finally {
          destroy(call, PjrtApi.Slot.EXECUTABLE_DESTROY, EXECUTABLE_DESTROY, executable);
        }
      }
    });
  }

  private void destroy(Arena call, PjrtApi.Slot slot, PjrtStructs.Struct struct, MemorySegment object) {
    MemorySegment args = struct.allocate(call);
    args.set(ADDRESS, struct.offset("executable"), object);
    try {
      api.check(slot, args, ExitCode.INTERNAL);
    } catch (PjrtException e) {
      LOG.log(System.Logger.Level.WARNING, e.getMessage());
    }
  }

  public boolean isClosed() {
    return lifecycle.isClosed();
  }

  /** {@code PJRT_LoadedExecutable_Destroy}. Safe twice; the owning client calls it if you do not. */
  @Override
  public void close() {
    lifecycle.close(() -> {
      try (Arena call = Arena.ofConfined()) {
        destroy(call, PjrtApi.Slot.LOADED_EXECUTABLE_DESTROY, LOADED_EXECUTABLE_DESTROY, handle);
      }
      client.forget(this);
    });
  }
}
