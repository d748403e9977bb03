/**
 * A minimal chat page on the AI SDK's own chat client (`AbstractChat`, what `useChat` wraps),
 * bundled for the browser by the test: it sends the text typed, shows each message's text and tool
 * parts, and an Approve and a Deny button on a part that asks for approval. The DOM is built with
 * text nodes only.
 */
import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';

class PageState implements ChatState<UIMessage> {
  #status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  #messages: UIMessage[] = [];
  get status() {
    return this.#status;
  }
  set status(status: ChatStatus) {
    this.#status = status;
    render();
  }
  get messages() {
    return this.#messages;
  }
  set messages(messages: UIMessage[]) {
    this.#messages = messages;
    render();
  }
  pushMessage = (message: UIMessage) => {
    this.messages = this.#messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.#messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.#messages.map((m, i) => (i === index ? message : m));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class PageChat extends AbstractChat<UIMessage> {}

const state = new PageState();
const chat = new PageChat({
  transport: new DefaultChatTransport({ api: '/api/chat' }),
  state,
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
});

function element(tag: string, text: string, attributes: Record<string, string> = {}): HTMLElement {
  const node = document.createElement(tag);
  node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function render(): void {
  const log = document.getElementById('log');
  if (!log) return;
  log.replaceChildren();
  document.body.dataset.status = state.status;
  for (const message of state.messages) {
    const item = element('li', '', { 'data-role': message.role });
    for (const part of message.parts) {
      if (part.type === 'text') item.append(element('p', part.text, { class: 'text' }));
      else if (part.type.startsWith('tool-') && 'state' in part) {
        const name = part.type.slice('tool-'.length);
        const tool = element('div', `${name}: ${part.state}`, {
          class: 'tool',
          'data-tool': name,
          'data-state': String(part.state),
        });
        if (part.state === 'approval-requested' && 'approval' in part && part.approval) {
          const { id } = part.approval;
          const approve = element('button', 'Approve', { type: 'button' });
          approve.onclick = () =>
            void chat.addToolApprovalResponse({ id, approved: true, reason: 'checked in the browser' });
          const deny = element('button', 'Deny', { type: 'button' });
          deny.onclick = () => void chat.addToolApprovalResponse({ id, approved: false });
          tool.append(approve, deny);
        }
        item.append(tool);
      }
    }
    log.append(item);
  }
}

document.getElementById('ask')?.addEventListener('submit', (event) => {
  event.preventDefault();
  const input = document.getElementById('text') as HTMLInputElement;
  void chat.sendMessage({ text: input.value });
  input.value = '';
});
render();
