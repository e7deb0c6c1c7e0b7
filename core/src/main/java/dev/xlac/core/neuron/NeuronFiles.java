package dev.xlac.core.neuron;

/**
 * The names in an AWS Neuron compile cache, defined once for every module that reads or writes one (the capture of
 * Neuron's graph extraction, the cache's Neuron layout, the neuronx-cc driver):
 * <pre>
 * neuronxcc-VERSION/                 a compiler version's directory ({@link #VERSION_DIR_PREFIX})
 *   MODULE_HASH+FLAGHASH/            one graph and flag set ({@link #MODULE_PREFIX})
 *     model.hlo_module.pb            the graph, a bare HloModuleProto ({@link #HLO})
 *     compile_flags.json             the flags, a JSON list of strings ({@link #FLAGS})
 *     model.neff, model.done         a finished compile: the NEFF, then its marker ({@link #NEFF}, {@link #DONE})
 *     model.log                      a failed compile's log, and no NEFF ({@link #LOG})
 * </pre>
 */
public final class NeuronFiles {
  /** The graph: a bare HloModuleProto. Also the input file name neuronx-cc is given. */
  public static final String HLO = "model.hlo_module.pb";
  /** The compile flags: a JSON list of strings. */
  public static final String FLAGS = "compile_flags.json";
  /** The compiled NEFF. Also neuronx-cc's output file name. */
  public static final String NEFF = "model.neff";
  /** Written after the NEFF: the compile finished. */
  public static final String DONE = "model.done";
  /** A failed compile's log. */
  public static final String LOG = "model.log";
  /** How every MODULE directory's name starts. */
  public static final String MODULE_PREFIX = "MODULE_";
  /** How a compiler version's directory's name starts: {@code neuronxcc-2.15.128.0+56dc5a86}. */
  public static final String VERSION_DIR_PREFIX = "neuronxcc-";

  private NeuronFiles() {}

  /** Whether a directory named {@code name} holds one graph of a Neuron cache: {@code MODULE_} and more. */
  public static boolean isModuleDirectory(String name) {
    return name.length() > MODULE_PREFIX.length() && name.startsWith(MODULE_PREFIX) && name.indexOf('/') < 0;
  }

  /** Whether a directory named {@code name} is a compiler version's directory: {@code neuronxcc-} and more. */
  public static boolean isVersionDirectory(String name) {
    return name.length() > VERSION_DIR_PREFIX.length() && name.startsWith(VERSION_DIR_PREFIX) && name.indexOf('/') < 0;
  }
}
