package dev.xlac.compiler.pjrt;

import java.util.List;
import java.util.Objects;

/**
 * What xlac's runtime proxy puts into a plugin's identity text, as a PJRT client of the plugin reports it (the
 * text itself, and the environment variables in it, are the runtime's: {@code dev.xlac.runtime.PluginIdentityText}).
 *
 * @param deviceKinds {@code PJRT_DeviceDescription_Kind} of each addressable device, in the client's order
 * @param attributes {@code PJRT_Plugin_Attributes}, in the plugin's order
 */
public record PjrtPluginFacts(String platformName, String platformVersion, int apiMajor, int apiMinor,
    String fileSha256, List<String> deviceKinds, List<Attribute> attributes) {

  public PjrtPluginFacts {
    deviceKinds = List.copyOf(deviceKinds);
    attributes = List.copyOf(attributes);
  }

  /**
   * One attribute with its PJRT type: {@code value} is a {@link String}, {@link Long}, {@code long[]}, {@link Float}
   * or {@link Boolean}; for a type xlac does not know, null, and {@code type} is its number.
   */
  public record Attribute(String name, int type, Object value) {
    public static final int STRING = PjrtStructs.NAMED_VALUE_STRING;
    public static final int INT64 = PjrtStructs.NAMED_VALUE_INT64;
    public static final int INT64_LIST = PjrtStructs.NAMED_VALUE_INT64_LIST;
    public static final int FLOAT = PjrtStructs.NAMED_VALUE_FLOAT;
    public static final int BOOL = PjrtStructs.NAMED_VALUE_BOOL;

    public Attribute {
      Objects.requireNonNull(name, "name");
    }
  }
}
