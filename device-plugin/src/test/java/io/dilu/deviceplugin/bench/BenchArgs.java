package io.dilu.deviceplugin.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * A node benchmark's command line: its positional arguments, and {@code --smoke}, the small size CI runs on every
 * commit (the same measurement, shorter, so that a bench that no longer runs is found at once). A bad command line
 * ends the program with status 2 and the reason.
 *
 * @param usage the bench's usage line, for errors
 */
record BenchArgs(String usage, List<String> positional, boolean smoke) {

    static final String SMOKE = "--smoke";

    /** Splits out {@code --smoke}; any other option is refused. */
    static BenchArgs parse(String usage, String[] args) {
        List<String> positional = new ArrayList<>();
        boolean smoke = false;
        for (String a : args) {
            if (a.equals(SMOKE)) {
                smoke = true;
            } else if (a.startsWith("--")) {
                exit("unknown option " + a, usage);
            } else {
                positional.add(a);
            }
        }
        return new BenchArgs(usage, List.copyOf(positional), smoke);
    }

    /**
     * The positional argument at {@code index} as seconds per run, 1..3600: {@code full} when absent,
     * {@code smoke} with {@code --smoke}, which sets the length itself.
     */
    int seconds(int index, int full, int smoke) {
        boolean given = positional.size() > index;
        if (this.smoke) {
            if (given) {
                exit(SMOKE + " sets the run's length: give no SECONDS with it", usage);
            }
            return smoke;
        }
        if (!given) {
            return full;
        }
        String text = positional.get(index);
        int seconds = wholeNumber(text);
        if (seconds < 1 || seconds > 3600) {
            exit("SECONDS must be a whole number in 1..3600, got '" + text + "'", usage);
        }
        return seconds;
    }

    /** The number, or -1 when the text is none. */
    private static int wholeNumber(String text) {
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static void exit(String why, String usage) {
        System.err.println(why + "; usage: " + usage);
        System.exit(2);
    }
}
