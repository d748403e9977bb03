/** This process's monotonic clock in ms: a pause does not stop it, a change of the wall clock does not move it. */
export const monotonic = (): number => performance.now();
