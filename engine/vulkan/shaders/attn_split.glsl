// The split arithmetic of the lanes attention (attn_lanes_f16.comp): a token's keys in splits of
// p.split_keys from its first visible key (key 0 without a window), each split's
// online-softmax state (max m, sum l of exp(score - m), output pairs o weighted alike) merged into a
// running total in ascending split order, the output o / l at the end. Merging the first split into
// the empty state copies it, so a split merged by its own workgroup, stored, and merged again by the
// workgroup that stores a (head, token)'s last split has the bits it has when one workgroup walks
// every split. The merge's results are `precise`: no compiler may contract or reorder them
// differently in the two paths.
// The includer defines HALF_HD (specialization constant) and WG, and binds `p` (AttnParams).

const uint OWNED = VKS_ATTN_MAX_HEAD_DIM / 2 / WG;  // output pairs an invocation holds, at most: lid + r * WG

struct SplitState {
  float m;
  float l;
  vec2 o[OWNED];
};

uint split_count_of(uint n_keys) { return (n_keys + p.split_keys - 1u) / p.split_keys; }

SplitState empty_split_state() {
  SplitState t;
  t.m = -1.0 / 0.0;
  t.l = 0.0;
  [[unroll]] for (uint r = 0; r < OWNED; ++r) t.o[r] = vec2(0.0);
  return t;
}

void merge_split(inout SplitState t, float m, float l, vec2 o[OWNED]) {
  if (t.l == 0.0) {  // the empty state (a split's l is above 0: its largest key weighs exp(0))
    t.m = m;
    t.l = l;
    t.o = o;
    return;
  }
  const float m_new = max(t.m, m);
  const float c_total = exp(t.m - m_new);
  const float c_split = exp(m - m_new);
  precise float l_new = fma(t.l, c_total, l * c_split);
  t.l = l_new;
  [[unroll]] for (uint r = 0; r < OWNED; ++r) {
    precise vec2 o_new = fma(t.o[r], vec2(c_total), o[r] * c_split);
    t.o[r] = o_new;
  }
  t.m = m_new;
}

// A stored split state: [m, l, then the head's head_dim output floats] (p.head_dim + 2 floats).
uint split_record_floats() { return p.head_dim + 2u; }

// sink: the head's sink logit, which weighs in the denominator only (-inf: none, the same bits as
// without: its correction is exp(0) and its weight 0).
void write_output(SplitState t, uint out_at, uint lid, float sink) {
  const float m_sink = max(t.m, sink);
  const float correction = exp(t.m - m_sink);
  const float inv_l = 1.0 / (t.l * correction + exp(sink - m_sink));
  [[unroll]] for (uint r = 0; r < OWNED; ++r) {
    const uint i = lid + r * WG;
    if (i < HALF_HD) {
      out_rows[out_at + 2 * i] = t.o[r].x * correction * inv_l;
      out_rows[out_at + 2 * i + 1] = t.o[r].y * correction * inv_l;
    }
  }
}

// A window layer's first visible key for a token with n_keys keys (0 without a window). Splits
// start there: a function of the token alone, as the numerics above need.
uint first_visible_key(uint n_keys) { return p.window == 0u || n_keys <= p.window ? 0u : n_keys - p.window; }
