package io.dilu.core.tokens;

import java.util.List;

/** One period's decision for a GPU: a grant per instance, in the order the samples came, and the state. */
public record TokenPlan(ControllerState state, List<TokenGrant> grants) {

    public TokenPlan {
        grants = List.copyOf(grants);
    }

    /** Tokens of one instance, or -1 when it was not in this period's samples. */
    public long tokensOf(String id) {
        for (TokenGrant g : grants) {
            if (g.id().equals(id)) {
                return g.tokens();
            }
        }
        return -1;
    }
}
