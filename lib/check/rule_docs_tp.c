/*
 * Rule catalogue entries of the tensor-parallel rules (T rules,
 * profile_tp.c), in catalogue order; see rule_doc_internal.h. A layer's
 * style (column, row, replicated) comes from a parallel-style profile,
 * stfix-rules(5), PARALLEL STYLES; the actions are those of stfix-rules(5),
 * ACTIONS AND PARAMETERS.
 */
#include "check/rule_doc_internal.h"

const stf_rule_doc stf__rule_docs_tp[] = {
    {
        .id = "T1",
        .severity = "error",
        .title = "TP: row-parallel layer whose K does not split into T shards",
        .checks = "With --tp T, a layer the profile calls row-parallel (attention output "
                  "projections, the second MLP matrix) has K input columns, counting unpacked "
                  "4-bit columns, that T does not divide.",
        .why = "SGLang's RowParallelLinear gives each GPU K/T input columns and divides K by "
               "T when the model is built; a remainder fails that division.",
        .ignored = "The model does not load at TP T: the server stops while building the "
                   "layer, quantized or not.",
        .fix = "Serve at a degree that divides K. No requantization helps: the group size "
               "does not change K.",
        .action = NULL,
        .effect = "refuses",
    },
    {
        .id = "T2",
        .severity = "warning",
        .title = "TP: row-parallel ConvRot groups straddle shards; SGLang replicates the layer",
        .checks = "With --tp T, a row-parallel layer with a ConvRot rotation (int8_tensorwise, "
                  "convrot_w4a4, asym_w4a8_int8) whose shard width K/T is not a multiple of "
                  "its group size G (for convrot_w4a4, also of its 64-column quantization "
                  "group). The message gives the shard width and the bytes each GPU then "
                  "holds.",
        .why = "A rotation group must lie inside one shard: the Hadamard transform mixes the "
               "G columns of a group, and a GPU holds only its own K/T input columns. "
               "SGLang's quantization configs report such a layer as not partitionable "
               "(supports_input_partition: K/T mod G must be 0) and the layer is kept whole "
               "on every GPU instead of being split.",
        .ignored = "The checkpoint loads and computes correctly, but every GPU holds all of "
                   "the layer's weight and scale bytes instead of 1/T of them: for the down "
                   "projections of a 64-layer encoder with intermediate size 25600 and G = "
                   "256 at T = 8, about 8.4 GB per GPU instead of 1 GB.",
        .fix = "Requantize the layer with the largest group size that divides K/T: requantize "
               "with tp: T picks it for row-parallel layers and leaves compatible layers "
               "alone; the bundled recipe sglang-int8-convrot-tp8 does this for T = 8.",
        .action = "requantize",
        .effect = "degraded",
    },
    {
        .id = "T3",
        .severity = "error",
        .title = "TP: column-parallel layer whose N does not split into T shards",
        .checks = "With --tp T, a layer the profile calls column-parallel (QKV and the first "
                  "MLP matrix) has N output rows that T does not divide.",
        .why = "SGLang's ColumnParallelLinear gives each GPU N/T output rows (and the [N,1] "
               "scale rows with them) and divides N by T when the model is built.",
        .ignored = "The model does not load at TP T.",
        .fix = "Serve at a degree that divides N. No requantization changes N.",
        .action = NULL,
        .effect = "refuses",
    },
    {
        .id = "T4",
        .severity = "error",
        .title = "TP: a row-parallel shard splits the format's scale blocks",
        .checks = "With --tp T, a row-parallel layer whose format keeps scales for blocks of "
                  "columns along K (asym_w4a8_int8 every group_size columns, nvfp4 every 16, "
                  "mxfp8 every 32) has a shard width K/T that is not a multiple of the block.",
        .why = "Each GPU loads the scale columns of its own K/T input columns; a block cut in "
               "two has no scale on either side, and the shard's scale tensor does not have "
               "the shape SGLang allocates for it.",
        .ignored = "The model does not load at TP T.",
        .fix = "Requantize the layer to int8_tensorwise with requantize tp: T (per-row scales "
               "split with any shard), or serve at a degree whose shards hold whole blocks.",
        .action = "requantize",
        .effect = "refuses",
    },
    {
        .id = "T5",
        .severity = "info",
        .title = "TP: Linear layer that no parallel-style profile classifies",
        .checks = "With --tp, a layer with a 2-D weight that neither the profile in use (given "
                  "with --tp-profile, or detected from the names) nor a recipe's parallel "
                  "list gives a style. It is reported once, not once per degree.",
        .why = "Whether a layer is split along N, along K or not at all depends on the "
               "model's code, not on the file; stfix does not guess it from the shape.",
        .ignored = "The layer is not checked for tensor parallelism: it may shard, be "
                   "replicated or stop the load.",
        .fix = "Give the layer a style in a profile file (--tp-profile FILE) or in the "
               "recipe's parallel list; stfix check --tp-profile list shows the bundled "
               "profiles.",
        .action = NULL,
        .effect = "note",
    },
};

const size_t stf__rule_docs_tp_n = sizeof stf__rule_docs_tp / sizeof stf__rule_docs_tp[0];
