/** The errors of `tollgate/mcp`: a server's tool list that cannot be used, and a tool's own error. */
import { TollgateError } from '../errors.js';

/** One tool of a server's list that was not made into a Tollgate tool, and why. */
export interface McpToolProblem {
  /** The tool's name as the server gave it (a string, or whatever else it sent). */
  name: unknown;
  /** What is wrong with it: `its name …`, `its inputSchema …`, `two tools are named …`. */
  reason: string;
}

/**
 * The server's tool list cannot be used: `tools/list` failed (the connection, a reply the SDK
 * refused, a pagination that never ends), or some tools are invalid and no `onInvalidTool` was
 * given. Nothing is half-made: `mcpTools` returns no tools when it throws this.
 */
export class McpToolsError extends TollgateError {
  /** The invalid tools, by name; empty when the listing itself failed. */
  readonly problems: readonly McpToolProblem[];

  constructor(message: string, problems: readonly McpToolProblem[] = [], cause?: unknown) {
    super(message, cause === undefined ? {} : { cause });
    this.problems = problems;
  }
}

/**
 * A tool call the server answered with `isError: true`. Thrown by the tool's `fn`, so the run
 * records it as an error observation (`McpToolError: <the server's text>`) that the model reads.
 */
export class McpToolError extends TollgateError {
  /** The tool's name on the server. */
  readonly tool: string;

  constructor(tool: string, message: string) {
    super(message);
    this.tool = tool;
  }
}
